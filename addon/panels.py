"""Properties editor panels (filled in below)."""


def register():
    pass


def unregister():
    pass
