"""What the engine reports while the service starts, held by the `Supervisor` until it can act on it."""

from __future__ import annotations

import asyncio

from lifecycle._job import ChildOutcome


class StartHold:
    """Held from before `Engine.start` until the host's hooks are in place (`Supervisor.release`).

    While the engine re-attaches (``adopting``), its reports name children whose records are not held
    yet: ``placed`` and ``running`` wait for `Supervisor.adopt`, starts and ends for the release. Then,
    until the release, every child's start and end wait in ``started`` and ``ended``: the hooks they run
    are the host's, which it has not registered yet (its plugins load once the service has started, and
    may use it then)."""

    __slots__ = ("adopting", "placed", "running", "started", "ended", "releasing")

    def __init__(self) -> None:
        self.adopting = True
        self.placed: set[str] = set()
        self.running: dict[str, float | None] = {}
        """Each child reported running, and when it began if the engine said (`EngineHost.running`)."""
        self.started: dict[str, None] = {}
        """In the order the engine reported them; their `subagent_start` hooks run first at the release."""
        self.ended: dict[str, ChildOutcome] = {}
        """In the order the engine reported them; those of adopted children are marked completing."""
        self.releasing: asyncio.Future | None = None
        """The release under way: a second caller (a `close` during `release_ends`) waits for it."""
