"""The words the chat reads for how a subagent is or ended: ``/agents`` lists children with
them, and a finished progress card counts its subagents that did not succeed by them.

One vocabulary, so a card's ``(1 failed, 2 interrupted)`` reads as ``/agents`` lists the same
children."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from lifecycle import PROCESS_EXIT, SubagentState

FORGOTTEN = "unknown (forgotten)"
RESTARTED = "interrupted by the restart"
ENDINGS = ("failed", "interrupted", RESTARTED, "cancelled", FORGOTTEN)
"""The ways a subagent can end other than succeeded, in the order a tally names them (the states'
own order, each word right after the one it refines), whatever order they ended in."""


def state_word(child: Any) -> str:
    """``child`` is a `lifecycle.ChildSnapshot` (or reads like one), None for one nothing remembers."""
    if child is None:
        return FORGOTTEN
    state = getattr(child.state, "value", child.state)
    if state == SubagentState.INTERRUPTED.value and getattr(child, "error", None) == PROCESS_EXIT:
        return RESTARTED
    return str(state).lower()


def endings(children: Iterable[Any]) -> str:
    """``1 failed, 2 interrupted``: how many of these children ended each way other than succeeded;
    "" when none did (those still at work are not counted)."""
    counts = Counter(state_word(c) for c in children)
    return ", ".join(f"{counts[word]} {word}" for word in ENDINGS if counts[word])
