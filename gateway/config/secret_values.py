"""The secret values a configuration holds, found before it is validated.

Messages about the configuration must not echo a secret, also when the same
value was typed into a key that is not secret (a token pasted into
``server.port``): the validator needs every secret value up front, while the
tree is still raw. Walks the settings dataclasses by their ``secret`` field
metadata, so a new secret field is covered without touching this module.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterable, Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints

MIN_LENGTH = 4
"""Shorter values are not treated as secrets in messages: masking them would mangle ordinary words."""


def secret_values(cls: type, raw: object) -> frozenset[str]:
    """Every string (or number) set on a ``secret`` field anywhere in ``raw``, read as ``cls``."""
    found: set[str] = set()
    _walk(cls, raw, found)
    return frozenset(value for value in found if len(value) >= MIN_LENGTH)


def mask(messages: Iterable[str], secrets: frozenset[str], replacement: str = "***") -> list[str]:
    """``messages`` with every secret value replaced, longest first (so one inside another goes whole)."""
    ordered = sorted(secrets, key=len, reverse=True)
    out = []
    for message in messages:
        for secret in ordered:
            message = message.replace(secret, replacement)
        out.append(message)
    return out


def _walk(tp: Any, raw: object, found: set[str]) -> None:
    if not isinstance(raw, Mapping):
        return
    if dataclasses.is_dataclass(tp):
        hints = get_type_hints(tp)
        for f in dataclasses.fields(tp):
            if f.name not in raw:
                continue
            value = raw[f.name]
            if f.metadata.get("secret"):
                if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                    found.add(str(value))
            else:
                for member in _members(hints[f.name]):
                    _walk(member, value, found)
        return
    if get_origin(tp) in (Mapping, dict):
        args = get_args(tp)
        if len(args) == 2:
            for item in raw.values():
                for member in _members(args[1]):
                    _walk(member, item, found)


def _members(tp: Any) -> tuple[Any, ...]:
    """The types a value may be read as: the members of a union, else the type itself."""
    return get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
