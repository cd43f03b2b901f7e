"""What the engine reports while the service starts, held by the `Supervisor` until it can act on it."""

from __future__ import annotations

from lifecycle._job import ChildOutcome


class StartHold:
    """Held from before `Engine.start` until the host's hooks are in place (`Supervisor.release`).

    While the engine re-attaches (``adopting``), its reports name children whose records are not held
    yet: ``placed`` and ``running`` wait for `Supervisor.adopt`, ends for the release. Then, until the
    release, every child's end waits in ``ended``: the completion pipeline would run the hooks the host
    has not registered yet (its plugins load once the service has started, and may use it then)."""

    __slots__ = ("adopting", "placed", "running", "ended")

    def __init__(self) -> None:
        self.adopting = True
        self.placed: set[str] = set()
        self.running: set[str] = set()
        self.ended: dict[str, ChildOutcome] = {}
        """In the order the engine reported them; those of adopted children are marked completing."""
