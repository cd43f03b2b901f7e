"""``--set KEY=VALUE`` on the command line: one setting changed for one run, over the file.

``KEY`` is a dotted key path (``agent.gateway_notify_interval``); ``VALUE`` is a
number, boolean or null when YAML reads it as one (``1``, ``2.5``, ``true``, ``null``,
read as the file is: `gateway.config.strict_yaml`), the text inside the quotes when it
is quoted, and else a string as written (``Be brief: one line``, ``my model #2``). The
result is validated like the file, with the same messages. Meant for trying things
(``make run`` uses it), not for secrets: a command line is visible to every user of
the machine.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence

import yaml

from gateway.config.strict_yaml import StrictLoader
from gateway.errors import ConfigError

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
_KEY_CHARS = re.compile(r"[\w.-]*")


def apply_overrides(raw: object, pairs: Sequence[str]) -> object:
    """A copy of the parsed file ``raw`` (None for no file) with each ``KEY=VALUE`` set;
    raises ConfigError for a pair that is not one."""
    if not pairs:
        return raw
    tree = copy.deepcopy(raw) if raw is not None else {}
    errors = []
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            errors.append(f"--set {_key_part(pair)}: expected KEY=VALUE with a dotted key, e.g. server.port=9000")
            continue
        try:
            value = _value(text)
        except yaml.constructor.ConstructorError as exc:
            errors.append(f"--set {key}: {exc.problem}")  # an octal number: refused as in the file
            continue
        if not isinstance(tree, dict):
            break  # the file's top level is not a mapping: the loader reports that
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[leaf] = value
    if errors:
        raise ConfigError(errors)
    return tree


def _value(text: str) -> object:
    """``text`` as a number, boolean or null if it is one to YAML, the text of a quoted string
    (``"no"``, the word, not false); else ``text`` as it is: a prompt's ``: `` or `` #`` is
    text, not a mapping or a comment."""
    text = text.strip()
    try:
        node = yaml.compose(text, Loader=StrictLoader)
    except yaml.YAMLError:
        return text
    if not isinstance(node, yaml.ScalarNode):
        return text  # nothing (""), or a list or mapping, which cannot be set this way
    value = yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader; raises for an octal number
    if isinstance(value, str) and node.style not in ("'", '"'):
        return text
    return value


def _key_part(pair: str) -> str:
    """The start of ``pair`` that could be a key, then "…" if more follows: what follows may be a
    value (``token:…``, the file's habit, or a space before ``=``), and values may be secrets."""
    end = _KEY_CHARS.match(pair).end()
    return pair[:end] + ("…" if end < len(pair) else "")
