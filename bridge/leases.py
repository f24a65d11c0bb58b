"""Sharing one server among URLab clients: the farm lease URLab's pool takes, and
per-entity control claims. Both are URLab's (RpcHandlers_Lease.cpp, BridgeServer's
lease, ControlOwnership, RpcHandlers_Control.cpp); both are cooperative claims,
not a security boundary.

The lease (ops `acquire_lease` / `release_lease`, namespace "farm") marks the whole
server taken, so URLabPool.lease never hands it to a second pool client: one lease
at a time; a second `acquire_lease` is refused `busy` (the reply names the lease
held); hello's `instance.busy` and the registry entry (bridge/registry.py) say so.
A lease guards one thing beyond itself: only its holder changes the step mode
(another client's set_mode to another mode is refused `mode_locked_by_server`,
which URLab's client takes as a warning when it connects: a pool client refused
`busy` connects, then closes, setting freerun, and would switch the holder's
server under it). Every other op of every client is served as before. Its
TTL is an idle time: each request of the holder's session (other than hello, meta,
pie_status, op_status and the lease ops, URLab's list: discovery polling must not
keep a lease alive) restarts it; none for `ttl_s` seconds and the lease is gone.
A request counts when it arrives: a step in flight when the TTL runs out finishes
and is answered as any step; the lease is free from then on, and the holder's next
request neither brings it back nor is refused for it (its release_lease is
`bad_request`: no such lease, as URLab answers). There is no renew op (URLab has
none): activity renews.

A claim (`claim_control` / `release_control`, namespace "runtime") reserves one
entity's controls for one owner: the request's `control_owner`, else its session.
While an entity is claimed, another owner's writes to it are refused
`not_control_owner` (the reply names the owner) and change nothing: a step's ctrl,
ctrl_map or xfrc_applied for it, set_qpos of it, set_mocap_pose of one of its
bodies, and a puppet step (it writes every entity); another owner's claim of it is
refused `control_claimed`. An entity sharing a joint, actuator or body with a
claimed one (a model root's entity holds its free bodies too) counts as claimed.
The owner's writes renew the claim. `ttl_s` 0 (the default) never expires;
`force` takes a claim from its owner. Unlike URLab's newest server, an unclaimed
entity takes anyone's controls: URLab's own client never claims, and would be
refused every ctrl otherwise. Claims end with the model they were made on.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass

from . import fields
from .op import Op
from .wire import ProtocolError

DEFAULT_LEASE_TTL = 60.0  # seconds (URLab's acquire_lease default)
# requests that are not the holder's activity (URLab's OpRefreshesLease): a pool probing
# for a free server sends them, and must not keep a crashed holder's lease alive
NOT_ACTIVITY = frozenset({"hello", "meta", "pie_status", "op_status", "acquire_lease", "release_lease"})
UNCLAIMED = "(unclaimed)"  # the owner a refusal names for an entity nobody holds (URLab's word)


@dataclass
class Lease:
    id: str
    owner: str  # the name the client gave (`owner`), else its session
    ttl: float  # seconds idle before it ends
    last: float  # when the holder was last active (Leases.clock)
    session: str | None  # the holder's session: only its requests renew the lease


@dataclass
class Claim:
    owner: str
    ttl: float  # 0: no expiry
    last: float


class Leases:
    """The server's lease and its entities' control claims. The dispatcher calls `note`
    for every request and `check_control` before every control write (under its lock);
    `busy` may be read from any thread (the registry's)."""

    def __init__(self, dispatcher, clock=time.monotonic):
        self.d = dispatcher
        self.clock = clock  # (seconds; a test may give its own)
        self.lease: Lease | None = None
        self.claims: dict[str, Claim] = {}
        self.on_change: list = []  # called (no arguments) when the lease is taken or ends
        self._claims_model = None
        self._lock = threading.Lock()  # (the lease is read by the registry's thread too)

    def ops(self) -> dict:
        return {
            "acquire_lease": Op(self.op_acquire_lease, "no_manager", namespace="farm",
                                reply=("lease_id:string", "ttl_s:float", "owner:string")),
            "release_lease": Op(self.op_release_lease, "no_manager", namespace="farm"),
            "claim_control": Op(self.op_claim_control, namespace="runtime", required=("articulation",),
                                reply=("articulation:string", "owner:string", "ttl_s:float")),
            "release_control": Op(self.op_release_control, namespace="runtime", required=("articulation",),
                                  reply=("articulation:string",)),
        }

    # ------------------------------------------------------------------ lease

    def _live(self, now: float) -> Lease | None:
        """The lease, unless it has been idle past its TTL (then it ends now)."""
        lease = self.lease
        if lease is not None and now - lease.last > lease.ttl:
            self.lease = None
            self._changed()
            return None
        return lease

    def _changed(self) -> None:
        for call in self.on_change:
            call()

    def busy(self) -> bool:
        """Whether the server is leased (hello's instance.busy, the registry entry's)."""
        with self._lock:
            return self._live(self.clock()) is not None

    def note(self, name: str, request: dict) -> None:
        """A request arrived: the holder's activity restarts its lease's TTL."""
        with self._lock:
            lease = self._live(self.clock())
            if lease is None or name in NOT_ACTIVITY:
                return
            if lease.session is None or request.get("session_id") == lease.session:
                lease.last = self.clock()

    def check_mode(self, request: dict, session, change: bool) -> None:
        """While leased, only the holder changes the server's step mode (the one thing
        a lease guards beyond itself: URLab's client sets its mode when it connects and
        sets freerun when it closes, so a pool client refused `busy` would switch the
        holder's server under it). `mode_locked_by_server` is the code URLab's client
        takes for it at connect (a warning, not a failure)."""
        if not change:
            return
        with self._lock:
            lease = self._live(self.clock())
        if lease is not None and lease.session is not None and session.id != lease.session:
            raise ProtocolError("mode_locked_by_server", "this server is leased by another client (URLab's "
                                "pool): only the lease holder changes its step mode")

    def op_acquire_lease(self, request: dict) -> dict:
        owner = fields.string(request, "owner", "")
        ttl = fields.number(request, "ttl_s", DEFAULT_LEASE_TTL)
        if ttl <= 0:
            raise ProtocolError("bad_value", f"'ttl_s' must be more than 0 seconds, not {ttl:g}")
        session = request.get("session_id")
        session = session if isinstance(session, str) and session in self.d.sessions else None
        with self._lock:
            held = self._live(self.clock())
            if held is not None:
                raise ProtocolError("busy", f"this server is already leased (by {held.owner or 'a client'}, "
                                    f"for {held.ttl:g} s after its last request)", {"lease_id": held.id})
            self.lease = Lease(str(uuid.uuid4()), owner or session or "", ttl, self.clock(), session)
            lease = self.lease
        self._changed()
        return {"op": "acquire_lease_ok", "lease_id": lease.id, "ttl_s": ttl, "owner": lease.owner}

    def op_release_lease(self, request: dict) -> dict:
        lease_id = request.get("lease_id")
        if not isinstance(lease_id, str) or not lease_id:
            raise ProtocolError("bad_request", "release_lease requires a non-empty lease_id")
        with self._lock:
            held = self._live(self.clock())
            if held is None or held.id != lease_id:
                raise ProtocolError("bad_request", "lease_id does not match the held lease (or no lease "
                                    "is held: an idle lease ends after its ttl_s)")
            self.lease = None
        self._changed()
        return {"op": "release_lease_ok"}

    # ----------------------------------------------------------------- claims

    @staticmethod
    def owner_of(request: dict, session) -> str:
        """Who a request writes control as: its `control_owner`, else its session."""
        owner = request.get("control_owner")
        return owner if isinstance(owner, str) and owner else session.id

    def _live_claims(self, now: float) -> dict[str, Claim]:
        """The claims that hold now (those of an older model, or idle past their TTL, end)."""
        if self._claims_model is not self.d.model:
            self.claims.clear()
            self._claims_model = self.d.model
        for prefix, claim in list(self.claims.items()):
            if claim.ttl > 0 and now - claim.last > claim.ttl:
                del self.claims[prefix]
        return self.claims

    def _overlap(self, a: str, b: str) -> bool:
        """Whether entities `a` and `b` share a joint, an actuator or a body (a model
        root's entity holds the free bodies under its prefix too)."""
        if a == b:
            return True
        by_prefix = self.d.by_prefix
        first, second = by_prefix.get(a), by_prefix.get(b)
        if first is None or second is None:
            return False
        return any(set(getattr(first, kind).tolist()) & set(getattr(second, kind).tolist())
                   for kind in ("joints", "actuators", "bodies"))

    def _other_owner(self, prefix: str, owner: str, now: float) -> Claim | None:
        """A claim of another owner on `prefix`, or on an entity sharing its elements."""
        for held_prefix, claim in self._live_claims(now).items():
            if claim.owner != owner and self._overlap(prefix, held_prefix):
                return claim
        return None

    def _entity(self, request: dict) -> str:
        prefix = fields.string(request, "articulation")
        by_prefix = self.d.by_prefix
        if prefix not in by_prefix:
            raise ProtocolError("unknown_articulation",
                                f"no entity {prefix[:80]!r} (known: {', '.join(by_prefix) or 'none'})")
        return prefix

    def op_claim_control(self, request: dict, session) -> dict:
        prefix = self._entity(request)
        ttl = fields.number(request, "ttl_s", 0.0)
        if ttl < 0:
            raise ProtocolError("bad_value", f"'ttl_s' must be 0 (no expiry) or more, not {ttl:g}")
        force = fields.boolean(request, "force", False)
        owner = self.owner_of(request, session)
        now = self.clock()
        held = self._other_owner(prefix, owner, now)
        if held is not None and not force:
            raise ProtocolError("control_claimed", f"{prefix} already owned by {held.owner}",
                                {"owner": held.owner})
        if force:  # (taken from whoever held it, or an entity sharing its elements)
            for other in [p for p, c in self.claims.items() if c.owner != owner and self._overlap(prefix, p)]:
                del self.claims[other]
        self.claims[prefix] = Claim(owner, ttl, now)
        return {"op": "claim_control_ok", "articulation": prefix, "owner": owner, "ttl_s": ttl}

    def op_release_control(self, request: dict, session) -> dict:
        prefix = self._entity(request)
        owner = self.owner_of(request, session)
        held = self._live_claims(self.clock()).get(prefix)
        if held is None or held.owner != owner:
            current = held.owner if held is not None else UNCLAIMED
            raise ProtocolError("not_control_owner", f"{prefix} owned by {current}", {"owner": current})
        del self.claims[prefix]
        return {"op": "release_control_ok", "articulation": prefix}

    def check_control(self, request: dict, session, prefixes) -> None:
        """Refuse (`not_control_owner`) a write to any of `prefixes` another owner has
        claimed (or an entity sharing its elements), before anything is applied; the
        owner's write renews its claims on them."""
        if not self.claims:
            return
        now = self.clock()
        owner = self.owner_of(request, session)
        prefixes = list(prefixes)
        for prefix in prefixes:
            held = self._other_owner(prefix, owner, now)
            if held is not None:
                raise ProtocolError("not_control_owner", f"{prefix} owned by {held.owner}",
                                    {"owner": held.owner})
        for prefix in prefixes:
            claim = self.claims.get(prefix)
            if claim is not None and claim.owner == owner:
                claim.last = now
