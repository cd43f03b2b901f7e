"""Where a key unknown in its section is a setting instead: ``telegram:`` at the top level is
``platforms.telegram``, ``max_concurrent_children`` under ``agent`` is ``delegation``'s.

A close spelling in the key's own section is the better guess (`validate` tries it first); this
is for a key written at the wrong level or in the wrong section, which no spelling check finds.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import NamedTuple, Union, get_args, get_origin, get_type_hints


class Home(NamedTuple):
    path: str
    """The setting's dotted key path."""
    strict: bool
    """Inside a ``strict_keys`` section, whose misspelt or misplaced keys are errors."""
    section: bool
    """A section of settings itself (``platforms.telegram``), not one setting."""


@functools.cache
def homes(schema: type) -> dict[str, tuple[Home, ...]]:
    """Every key name of ``schema`` (a settings dataclass) and the places it is a setting.

    Entries of mappings whose keys the user chooses (``model_map.<name>``) are left out.
    """
    found: dict[str, list[Home]] = {}
    _walk(schema, "", False, found)
    return {name: tuple(places) for name, places in found.items()}


def _walk(cls: type, prefix: str, strict: bool, found: dict[str, list[Home]]) -> None:
    hints = get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        path, tp = prefix + f.name, hints[f.name]
        members = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
        found.setdefault(f.name, []).append(Home(path, strict, all(dataclasses.is_dataclass(m) for m in members)))
        for member in members:
            if dataclasses.is_dataclass(member):
                _walk(member, path + ".", strict or bool(f.metadata.get("strict_keys")), found)
