"""One op of the catalogue: its handler and what `meta` says of it."""

from __future__ import annotations


class Op:
    """`handler(request, session)` (or `handler(request)` for category "no_manager": no
    session needed), URLab's category and client namespace, the request fields it
    requires and the reply fields it sends ("name:type")."""

    def __init__(self, handler, category="manager_required", namespace="", required=(), reply=()):
        self.handler, self.category, self.namespace = handler, category, namespace
        self.required, self.reply = tuple(required), tuple(reply)
