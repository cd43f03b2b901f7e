"""Validate a parsed YAML tree against settings dataclasses.

Driven entirely by the dataclasses: types come from the annotations, bounds and
flags from field metadata (see `agent.settings`). Every problem is collected, so
one run of `config check` shows all of them. Messages name the full key path and
never echo a secret's value, nor any other value that equals or contains one
(a token pasted into the wrong key). Unknown keys are warnings, except inside a
section marked ``strict_keys`` (``platforms``), where a misspelling would
silently switch something off, and a misspelling of such a section's own name.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml

from gateway.config.home import NoHome, expand_user
from gateway.config.interpolate import FAILED, Expanded
from gateway.config.misplaced import homes
from gateway.config.secret_values import holds_secrets
from gateway.config.strict_yaml import StrictLoader

_NO_META: Mapping = types.MappingProxyType({})
_INT = re.compile(r"[+-]?\d+")
_POSITION = re.compile(r"\[(\d+)\]")  # of an item in a key path: plugins[2]
NUL = "\0"
NUL_IN_PATH = "a path cannot hold the character U+0000"
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


class Invalid(Exception):
    def __init__(self, expected: str):
        self.expected = expected


class Validator:
    """Builds settings objects, collecting ``errors`` and ``warnings`` as it goes."""

    def __init__(self, secrets: frozenset[str] = frozenset(), schema: type | None = None) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.secrets = secrets
        """Values never to echo, wherever they were typed."""
        self.homes = homes(schema) if schema is not None else {}
        """Where each key name is a setting, to tell where a key in the wrong place goes."""
        self._strict = 0  # > 0 inside a strict_keys section: unknown keys are errors
        self._kept: dict[str, list[int]] = {}
        """Of each list that lost invalid items, the positions in the file of the items it kept."""

    def section(self, cls: type, raw: object, path: str, meta: Mapping = _NO_META,
                defaults: Mapping[str, Any] = _NO_META) -> Any:
        """An instance of dataclass ``cls``; bad fields keep their defaults and are reported. ``defaults``
        stand in for the dataclass's own where ``raw`` sets no valid value (one that reads the environment)."""
        # A section with every key commented out parses as null: treat it as empty.
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            self.errors.append(f"{path}: expected a mapping, got {self.show(raw, tp=cls)}")
            return cls(**defaults)
        strict = bool(meta.get("strict_keys"))
        self._strict += strict
        try:
            return self._fields(cls, raw, path, defaults)
        finally:
            self._strict -= strict

    def _fields(self, cls: type, raw: Mapping, path: str, defaults: Mapping[str, Any]) -> Any:
        hints = get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
        self._unknown_keys(raw, fields, path)
        values = dict(defaults)
        for name, f in fields.items():
            if name not in raw or raw[name] is FAILED:
                continue
            try:
                values[name] = self.value(raw[name], hints[name], join(path, name), f.metadata)
            except Invalid as exc:
                message = (f"{join(path, name)}: expected {exc.expected},"
                           f" got {self.show(raw[name], f.metadata, tp=hints[name])}"
                           f"{misread_hint(name, raw[name], hints[name])}")
                if f.metadata.get("lenient"):
                    self.warnings.append(f"{message}; ignored, using the default {show(_default(f))}")
                else:
                    self.errors.append(message)
            except NoHome as exc:
                self.errors.append(f"{join(path, name)}: {raw[name]} {exc}")
        return cls(**values)

    def as_in_file(self, message: str) -> str:
        """``message`` about the validated settings, its key's list positions made those of the file:
        a list that lost an invalid item is shorter, so a later check counts the items after it wrong."""
        key, sep, rest = message.partition(": ")
        out, pos = [], 0
        for match in _POSITION.finditer(key):
            out.append(key[pos:match.start()])
            kept = self._kept.get("".join(out))
            index = int(match.group(1))
            out.append(f"[{kept[index] if kept is not None and index < len(kept) else index}]")
            pos = match.end()
        return "".join(out) + key[pos:] + sep + rest

    def show(self, value: object, meta: Mapping = _NO_META, tp: Any = None) -> str:
        """`show`, hiding a value that is (or holds) a configured secret's value, and a variable's value
        given for ``tp``, the type expected, where that holds secrets (`holds_secrets`): most likely
        the secret, its setting's key left out (``main: ${WEBHOOK_SECRET}`` for a webhook route)."""
        if isinstance(value, str) and not meta.get("secret") and any(s in value for s in self.secrets):
            return "a string that holds the value of a secret (not shown)"
        if isinstance(value, Expanded) and tp is not None and holds_secrets(tp):
            return "a string from the environment (not shown: it may hold secrets)"
        return show(value, meta)

    def value(self, value: object, tp: Any, path: str, meta: Mapping = _NO_META) -> Any:
        """``value`` converted to ``tp``; raises Invalid for a mismatch at this level.

        Containers report their own elements' problems (with the element's path)
        and never raise, so one bad list item does not hide the others.
        """
        origin = get_origin(tp)
        if origin in (Union, types.UnionType):
            return self._union(value, get_args(tp), path, meta)
        if dataclasses.is_dataclass(tp):
            return self.section(tp, value, path, meta)
        if origin is tuple:
            if not isinstance(value, list):
                raise Invalid("a list")
            item_tp = get_args(tp)[0]
            items = [self._item(v, item_tp, f"{path}[{i}]", meta) for i, v in enumerate(value)]
            kept = [i for i, item in enumerate(items) if item is not FAILED]
            if len(kept) < len(items):
                self._kept[path] = kept
            return tuple(items[i] for i in kept)
        if origin in (Mapping, dict) or tp in (Mapping, dict):
            return self._mapping(value, tp, path, meta)
        return self._scalar(value, tp, meta)

    def _union(self, value: object, members: tuple, path: str, meta: Mapping) -> Any:
        optional = type(None) in members
        # An empty expansion (`${BASE_URL:-}`) means "unset" for an optional field.
        if value is None or (optional and isinstance(value, Expanded) and value == ""):
            if optional:
                return None
            raise Invalid(describe(members, meta))
        for member in members:
            # The first member whose type fits decides, so an out-of-range number
            # is reported with that member's bounds rather than as "wrong type".
            if member is not type(None) and _fits(value, member):
                return self.value(value, member, path, meta)
        raise Invalid(describe(members, meta))

    def _item(self, value: object, tp: Any, path: str, meta: Mapping) -> Any:
        """A container element, or FAILED (already reported) so later checks see only valid values."""
        if value is FAILED:
            return FAILED
        try:
            return self.value(value, tp, path)
        except Invalid as exc:
            self.errors.append(f"{path}: expected {exc.expected}, got {self.show(value, meta, tp=tp)}"
                               f"{misread_hint(None, value, tp)}")
            return FAILED
        except NoHome as exc:
            self.errors.append(f"{path}: {value} {exc}")
            return FAILED

    def _mapping(self, value: object, tp: Any, path: str, meta: Mapping) -> Mapping:
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise Invalid("a mapping")
        args = get_args(tp)
        value_tp = args[1] if args else Any
        known = meta.get("known_keys")
        if known is not None:
            self._unknown_keys(value, known, path)
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                self.errors.append(f"{join(path, key)}: expected a string key, got {self.show(key)}")
            elif (item := self._item(item, value_tp, join(path, key), _NO_META)) is not FAILED:
                out[key] = item
        return types.MappingProxyType(out)

    def _scalar(self, value: object, tp: Any, meta: Mapping) -> Any:
        try:
            result = _convert(value, tp)
        except Invalid:
            raise Invalid(describe((tp,), meta)) from None
        if isinstance(result, (int, float)) and not isinstance(result, bool):
            low, high = meta.get("min"), meta.get("max")
            if (low is not None and result < low) or (high is not None and result > high):
                raise Invalid(describe((tp,), meta))
        return result

    def _unknown_keys(self, raw: Mapping, known, path: str) -> None:
        for key in raw:
            if key not in known:
                close = difflib.get_close_matches(str(key), [str(k) for k in known], n=1, cutoff=0.6)
                places = () if close else self.homes.get(str(key), ())
                guess = close[0] if close else places[0].path if len(places) == 1 else None
                hint = f' (did you mean "{guess}"?)' if guess else ""
                if self._strict:
                    self.errors.append(f"{join(path, key)}: unknown key{hint}; a misspelt key here would"
                                       " silently leave something off")
                elif close and close[0] not in raw and _strict_section(known, close[0]):
                    # `platfroms:` leaves every platform in it off, as a misspelt key inside it leaves one. Beside
                    # the section itself, a near miss (an anchor's holder, `platform_defaults: &d`) leaves none off.
                    self.errors.append(f"{join(path, key)}: unknown key{hint}; a misspelt section here would"
                                       " silently leave something off")
                elif len(places) == 1 and places[0].strict and places[0].section:
                    # Out of place, a platform (`telegram:` at the top) is as lost as a misspelt one in platforms.
                    parent = places[0].path.rpartition(".")[0]
                    self.errors.append(f"{join(path, key)}: unknown key{hint}; a key that belongs under {parent}"
                                       " would silently leave something off here")
                else:
                    self.warnings.append(f"{join(path, key)}: unknown key{hint}")


def _strict_section(known: object, name: str) -> bool:
    """Whether ``name``, among the ``known`` keys, is a section whose unknown keys are errors (``strict_keys``)."""
    field = known.get(name) if isinstance(known, Mapping) else None
    return isinstance(field, dataclasses.Field) and bool(field.metadata.get("strict_keys"))


def _convert(value: object, tp: Any) -> Any:
    """Scalar conversion; strings from ``${...}`` may stand for numbers and booleans."""
    expanded = isinstance(value, Expanded)
    if get_origin(tp) is Literal:
        # YAML 1.1 reads a bare `off` as false: `progress: off` means the choice "off".
        if value is False and "off" in get_args(tp):
            return "off"
        for choice in get_args(tp):
            # Case-insensitive so `level: info` works; the canonical spelling is stored.
            if isinstance(value, str) and isinstance(choice, str) and value.lower() == choice.lower():
                return choice
        raise Invalid(describe((tp,)))
    if tp is bool:
        if isinstance(value, bool):
            return value
        if expanded and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if expanded and _INT.fullmatch(value.strip()):
            return int(value)
    elif tp is float:
        if expanded:
            try:
                value = float(value)
            except ValueError:
                pass
        # Not NaN, nor infinity: every number setting is a bound (a grace, a timeout) that must end.
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return str(value)
    elif tp is Path:
        if isinstance(value, str) and value and NUL not in value:  # which no file's name holds
            return expand_user(Path(value))  # raises NoHome, which its caller words
    elif tp is Any:
        return value
    else:
        raise TypeError(f"the config loader does not support settings of type {tp!r}")
    raise Invalid(describe((tp,)))


def misread_hint(name: str | None, value: object, tp: Any) -> str:
    """How to write what was likely meant, in parentheses, when YAML read it as another type; else "".

    A number or boolean in quotes is text, and so are some bare ones YAML 1.1 does not read as
    numbers (``08080``, ``1e3``); a bare ``no`` or ``off`` meant as text is false.
    """
    members = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
    if isinstance(value, str) and NUL in value and Path in members:
        return f" ({NUL_IN_PATH})"
    if isinstance(value, bool) and str in members:
        # Which of the two words was written is lost with the parse: both are offered, so neither is wrong.
        words = ("yes", "on") if value else ("no", "off")
        quoted = [f'{name}: "{word}"' if name else f'"{word}"' for word in words]
        return (f" (YAML reads a bare {' or '.join(words)} as {show(value)}: quote the word to mean the text,"
                f" {' or '.join(quoted)})")
    if not isinstance(value, str) or isinstance(value, Expanded):
        return ""
    for member in members:
        if member in (int, float, bool):
            try:
                meant = _convert(Expanded(value), member)
            except Invalid:
                continue
            if not _fits(_bare(value.strip()), member):
                # Text to YAML with or without quotes (08080, 1e3): dropping quotes would not help.
                spelt = yaml.safe_dump(meant).removesuffix("...\n").strip()
                return f" (YAML reads it as text: write {f'{name}: ' if name else ''}{spelt})"
            written = f"{name}: {value.strip()}" if name else value.strip()
            return f" (quoted, so it is text: drop the quotes and write {written})"
    return ""


def _bare(text: str) -> object:
    """What the configuration's YAML reader makes of ``text`` written without quotes; ``text`` when
    it refuses it (``0755``)."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError:
        return text


def _fits(value: object, tp: Any) -> bool:
    """Whether ``value`` has the right shape for ``tp``, bounds aside."""
    if dataclasses.is_dataclass(tp) or tp in (Mapping, dict) or get_origin(tp) in (Mapping, dict):
        return isinstance(value, Mapping)
    if get_origin(tp) is tuple:
        return isinstance(value, list)
    try:
        _convert(value, tp)
        return True
    except Invalid:
        return False


def describe(members: tuple, meta: Mapping = _NO_META) -> str:
    """What a field accepts, e.g. ``an integer ≥ 1`` or ``one of "auto", "inline"``."""
    alternatives: list[str] = []
    all_tokens = True
    has_literal = False
    for tp in members:
        if get_origin(tp) is Literal:
            has_literal = True
            alternatives += [json.dumps(c) for c in get_args(tp)]
        elif tp is bool:
            alternatives += ["true", "false"]
        elif tp is type(None):
            alternatives.append("null")
        else:
            all_tokens = False
            alternatives.append(_phrase(tp) + _bounds(tp, meta))
    if len(alternatives) == 1:
        return alternatives[0]
    if all_tokens and has_literal and len(alternatives) > 2:
        return "one of " + ", ".join(alternatives)
    return ", ".join(alternatives[:-1]) + " or " + alternatives[-1]


def _phrase(tp: Any) -> str:
    if dataclasses.is_dataclass(tp) or tp in (Mapping, dict) or get_origin(tp) in (Mapping, dict):
        return "a mapping"
    names = {int: "an integer", float: "a number", str: "a string", Path: "a path", tuple: "a list"}
    return names.get(get_origin(tp) or tp, "a value")


def _bounds(tp: Any, meta: Mapping) -> str:
    if tp not in (int, float):
        return ""
    low, high = meta.get("min"), meta.get("max")
    parts = ([f"≥ {_number(low)}"] if low is not None else []) + ([f"≤ {_number(high)}"] if high is not None else [])
    return (" " + " and ".join(parts)) if parts else ""


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def show(value: object, meta: Mapping = _NO_META) -> str:
    """A value as a user wrote it (JSON-ish); a secret only by its type."""
    kinds = {bool: "boolean", int: "integer", float: "number", type(None): "null", list: "list", dict: "mapping"}
    kind = "string" if isinstance(value, str) else kinds.get(type(value), type(value).__name__)
    if meta.get("secret"):
        return f"a value of type {kind}"
    if isinstance(value, (list, dict)):
        return f"a {kind}"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = json.dumps(value if isinstance(value, (str, int, float, bool, type(None))) else str(value), ensure_ascii=False)
    return text if len(text) <= 80 else text[:76] + '…"'


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]


def join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)
