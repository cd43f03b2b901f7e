"""One live progress card per turn: a message that appears once a turn has run a while and
is edited in place as the turn goes, instead of a stack of notices.

The card is a headline (what the agent is doing, for how long: waiting for the chat's answer while
the model's question waits, for the model while its server is down: `ProgressCard.hold`) and up to
`MAX_LINES` lines of at most `LINE_CHARS` characters (a longer one is cut with "…", see
`gateway.excerpt`), made from real events only: tools started and finished (by name: never their
arguments or output) and the turn's subagents (goal, state, elapsed time, N of M done), and the chat's
messages waiting for their turn behind it (`waiting_line`), so that whoever sent one (another member of
a group, say) sees it was taken and will be answered. A turn that ends before
``display.progress_delay`` seconds shows no card at all. The outbox coalesces the
card's edits and paces them as the platform asks; the turn runner finalises the card
when the turn ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from agent import Clock
from gateway import child_states
from gateway.excerpt import shorten
from gateway.notices import WAITING_FOR_MODEL, format_elapsed

log = logging.getLogger("gateway.progress_card")

MAX_LINES = 8
LINE_CHARS = 120
CHILD_TICK_SECONDS = 2.0
"""How often the card looks at the turn's subagents while any of them runs."""
DELEGATE = "delegate_task"
ASK = "clarify"
"""The tool that asks the chat and waits for its answer (`gateway.questions`): the card says whose move it is."""
HELD = WAITING_FOR_MODEL
"""The headline's words while the turn waits for its model's server known to be down (`ProgressCard.hold`), as its
chat's notice says it (`gateway.replies.MODEL_DOWN_WAITING`)."""

Publish = Callable[[str, int], None]
"""``publish(text, n)``: n = 0 sends the card, later n edit it."""


class ChildView(Protocol):
    subagent_id: str
    goal: str
    state: object
    started_at: float | None
    completed_at: float | None
    activity: str


class ProgressCard:
    """Arm with `start`; feed it tool events, and `hold` while its turn waits for the model; `disarm` is synchronous
    and final."""

    def __init__(self, *, delay: float, heartbeat: float, mode: bool | Literal["generic"], clock: Clock,
                 publish: Publish, children: Callable[[], Sequence[ChildView]],
                 counts: Callable[[], tuple[int, int]] | None = None,
                 waiting: Callable[[], int] = lambda: 0, ran: float = 0.0) -> None:
        """``ran``: how long the work had run already when this card began (its headline's time counts it)."""
        self._delay = delay
        self._heartbeat = heartbeat
        self._generic = mode == "generic"
        self._clock = clock
        self._publish = publish
        self._children = children
        self._counts = counts
        """(done, launched) subagents, exact, while any of them runs; (0, 0) otherwise. `children` may
        miss some finished between two looks, more than the source keeps of a session's finished ones."""
        self._waiting = waiting
        """How many of the chat's messages wait for their turns behind this one."""
        self._started = clock.monotonic() - ran
        self._tools: deque[str] = deque(maxlen=MAX_LINES)
        self._current: str | None = None
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._armed = False
        self._held = False
        self.sent = 0
        """Renders published so far: 0 means the chat has no card to finalise."""
        self._last_text: str | None = None
        self.subagents = 0
        """How many subagents the turn launched, as the card last saw."""
        self._finished: dict[str, ChildView] = {}
        """Subagents seen finished, by id: the source keeps only a session's latest few finished ones."""

    def start(self) -> None:
        self._armed = True
        self._task = asyncio.ensure_future(self._run())

    def disarm(self) -> None:
        self._armed = False
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def hold(self, held: bool) -> None:
        """While ``held`` (the turn waits for its model to come back, its chat told so:
        `agent.models._outage.WaitWhenDown`), a card shown reads so (`HELD`), still refreshed at its pace; "Thinking"
        for ten minutes said the bot was writing. One not shown yet is shown meanwhile only once a message waits
        behind the turn (the chat's notice says the rest), else ``delay`` after the wait ends (at ``delay`` as ever,
        the wait over by then). Released, the card reads as before at once. Nothing after `disarm`: it stays
        final."""
        if held != self._held:
            self._held = held
            self._wake.set()

    def queue_changed(self) -> None:
        """A message of the chat was queued behind the turn, or one waiting there was dropped (its user deleted it):
        shown at once (once the card is due)."""
        self._wake.set()

    def tool_started(self, name: str) -> None:
        self._current = name
        self._wake.set()

    def tool_finished(self, name: str, ok: bool) -> None:
        self._current = None
        self._tools.append(f"{'✓' if ok else '✗'} {name}")
        self._wake.set()

    async def _run(self) -> None:
        await self._clock.sleep(self._delay)
        while self._held and not self._waiting():  # `hold`
            self._wake.clear()
            await self._wake.wait()
            if not self._held:
                await self._clock.sleep(self._delay)
        while self._armed:
            try:
                self._render_and_publish()
            except Exception:  # the card must never break the turn it describes
                log.exception("updating a progress card failed")
            self._wake.clear()
            # Until the next event, a subagent's progress, or the heartbeat, whichever comes first.
            wait = CHILD_TICK_SECONDS if self._current == DELEGATE else self._heartbeat
            sleeper = asyncio.ensure_future(self._clock.sleep(wait if wait > 0 else 3600.0))
            woken = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait((sleeper, woken), return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                woken.cancel()

    def _render_and_publish(self) -> None:
        text = self.render()
        if text != self._last_text:
            self._publish(text, self.sent)
            self.sent += 1
            self._last_text = text

    def render(self) -> str:
        now = self._clock.monotonic()
        elapsed = format_elapsed(now - self._started)
        children = self._seen_children()
        done, launched = self._counts() if self._counts is not None else (0, 0)
        if not launched:
            done, launched = sum(1 for c in children if _ended(c)), len(children)
        self.subagents = max(self.subagents, launched)
        if self._held:
            doing = HELD
        elif self._current == DELEGATE and launched:
            doing = f"Waiting for subagents: {done} of {launched} done"
        elif self._current == ASK:  # as a notice says it: the turn waits for the chat, not for a tool
            doing = "Waiting for your answer"
        elif self._current is not None:
            doing = f"Running {self._current}"
        else:
            doing = "Thinking"
        headline = f"⏳ {doing} — {elapsed}"
        waiting = waiting_line(self._waiting())
        if self._generic:
            return "\n".join([headline if self._held else f"⏳ Still working — {elapsed}", *waiting])
        current = [f"▸ {self._current}"] if self._current is not None and self._current != DELEGATE else []
        lines = [*self._tools, *_child_lines(children, self._clock.time(), MAX_LINES - len(current)), *current]
        return "\n".join([headline, *(shorten(line, LINE_CHARS) for line in lines[-MAX_LINES:]), *waiting])

    def endings(self) -> str:
        """How the turn's subagents that did not succeed ended (`gateway.child_states.endings`), for its
        done line, once every one of them was seen finished. A fan-out of more than the source keeps
        of a session's finished children may finish faster than the card looks: the outcomes it did
        not see are not known here, and a partial tally would read as the whole, so then none."""
        finished = [c for c in self._seen_children() if _ended(c)]
        return child_states.endings(finished) if len(finished) >= self.subagents else ""

    def _seen_children(self) -> list[ChildView]:
        """The subagents the source gives now, after those seen finished that it has let go of
        since (a finished child never changes): the counts never shrink."""
        current = list(self._children())
        for child in current:
            if _ended(child):
                self._finished[child.subagent_id] = child
        shown = {child.subagent_id for child in current}
        return [*(c for sid, c in self._finished.items() if sid not in shown), *current]


def waiting_line(n: int) -> list[str]:
    """The card's last line while ``n`` messages wait for their turns (none while none does)."""
    if not n:
        return []
    return [f"⋯ {n} more message{'s' if n != 1 else ''} waiting, answered after this"]


CHILD_INDENT = "\u00a0\u00a0"
"""Subagent lines sit under the tool that started them. No-break spaces: every platform renders the
card as Markdown, which drops a line's leading plain spaces and would flatten the tree."""


def _child_lines(children: Sequence[ChildView], now: float, room: int) -> list[str]:
    """A line for each subagent, in their order; with more than ``room``, those that tell most of the work
    and a last line counting the others. By launch order alone, a fan-out past `lifecycle.max_running` showed
    only its latest ones, still waiting for a slot, and none of those at work until all but a few had finished."""
    if len(children) <= room:
        return [_child_line(child, now) for child in children]
    chosen = sorted(range(len(children)), key=lambda i: _telling(children[i], i))[:room - 1]
    return [*(_child_line(children[i], now) for i in sorted(chosen)),
            f"{CHILD_INDENT}… and {len(children) - len(chosen)} more"]


_ENDED = frozenset({"succeeded", "failed", "interrupted", "cancelled"})


def _ended(child: ChildView) -> bool:
    """Whether the card shows ``child`` finished: its end timed and published. A child's end is timed as its row
    goes to the journal, its state set only once that commits (`lifecycle._supervisor`): a card drawn between the
    two read `✗ b — running, 3 s`, and kept it until its next edit."""
    return child.completed_at is not None and getattr(child.state, "value", str(child.state)).lower() in _ENDED


def _telling(child: ChildView, index: int) -> tuple[int, float]:
    """Sorts first the subagents at work (the latest launched first), then those finished (the latest first),
    then those waiting for a slot (the next to start first)."""
    if _ended(child) and child.completed_at is not None:
        return 1, -child.completed_at
    if child.started_at is None:
        return 2, index
    return 0, -index


def _child_line(child: ChildView, now: float) -> str:
    state = getattr(child.state, "value", str(child.state)).lower()
    goal = " ".join(child.goal.split())
    if _ended(child) and child.completed_at is not None:
        mark = "✓" if state == "succeeded" else "✗"
        took = format_elapsed(max(0.0, child.completed_at - (child.started_at or child.completed_at)))
        return f"{CHILD_INDENT}{mark} {goal} — {state}, {took}"
    if child.started_at is None:
        return f"{CHILD_INDENT}· {goal} — waiting"
    running = int(max(0.0, now - child.started_at) // 5 * 5)  # 5 s steps: fewer edits
    return f"{CHILD_INDENT}▸ {goal} — running, {format_elapsed(running)}"
