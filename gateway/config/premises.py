"""A finding of the checks across settings, with the settings it rests on, so that one mistake is said once.

Those checks (`gateway.config.rules`, `gateway.config.delegation_rules`) read the settings once they are
validated, where a value the validator refused stands at its default: ``allowed_users: 123``, no list, reads
as no users at all, and "nobody may talk to the bot" beside its error would send the operator looking for a
second mistake. A `Finding` names the keys it reads; `founded` leaves out each that reads a refused one.
"""

from __future__ import annotations

from collections.abc import Iterable


class Finding(str):
    """An error or warning of a check across settings; ``reads``: the dotted keys of the settings it rests on."""

    reads: tuple[str, ...]

    def __new__(cls, text: str, reads: Iterable[str]) -> Finding:
        finding = super().__new__(cls, text)
        finding.reads = tuple(reads)
        return finding

    def __getnewargs__(self) -> tuple[str, tuple[str, ...]]:  # copy, deepcopy and pickle pass reads back
        return str(self), self.reads


def founded(findings: Iterable[str], refused: Iterable[str]) -> list[str]:
    """``findings`` less each `Finding` that reads a setting one of the ``refused`` messages is about (by the key
    before its first ": "), a setting inside it (an item of a list) or the section holding it."""
    bad = {message.partition(": ")[0] for message in refused}

    def touched(key: str) -> bool:
        return any(b == key or b.startswith((f"{key}.", f"{key}[")) or key.startswith((f"{b}.", f"{b}[")) for b in bad)

    return [finding for finding in findings if not any(touched(key) for key in getattr(finding, "reads", ()))]
