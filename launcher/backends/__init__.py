"""Backends deliver a LaunchPlan; they never re-derive any part of it."""


def get_backend(name: str):
    if name == "local":
        from launcher.backends.local import LocalBackend
        return LocalBackend()
    from launcher.errors import KitError
    raise KitError(f"backend {name}: not available yet in this version; use --dry-run to see its plan")
