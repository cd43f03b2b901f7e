"""The words the chat reads for how a subagent is or ended: ``/agents`` lists children with
them and counts those it leaves out by them, and a finished progress card counts its subagents
that did not succeed by them.

One vocabulary in one order, so a card's ``(1 failed, 2 interrupted)`` reads as ``/agents`` lists
and counts the same children."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from lifecycle import PROCESS_EXIT, SubagentState

FORGOTTEN = "unknown (forgotten)"
RESTARTED = "interrupted by the restart"
_REFINED = {SubagentState.INTERRUPTED: RESTARTED, SubagentState.UNKNOWN: FORGOTTEN}
WORDS = tuple(word for state in SubagentState for word in (state.value.lower(), _REFINED.get(state)) if word)
"""Every word, in the order a tally names them (`tally`): the states' own order, each word right
after the one it refines, whatever order the children were listed or ended in."""
ENDINGS = ("failed", "interrupted", RESTARTED, "cancelled", FORGOTTEN)
"""The ways a subagent can end other than succeeded, in `WORDS`' order."""


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
    return tally(word for word in map(state_word, children) if word in ENDINGS)


def tally(words: Iterable[str]) -> str:
    """``2 running, 5 succeeded, 1 failed``: how many of each (`state_word`) word, in `WORDS`' order."""
    counts = Counter(words)
    return ", ".join(f"{counts[word]} {word}" for word in sorted(counts, key=lambda w: _RANK.get(w, len(_RANK))))


_RANK = {word: rank for rank, word in enumerate(WORDS)}
