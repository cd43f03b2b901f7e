"""``--set KEY=VALUE`` on the command line: one setting changed for one run, over the file.

``KEY`` is a dotted key path (``agent.gateway_notify_interval``); ``VALUE`` is read
as a YAML scalar, so ``1``, ``2.5``, ``true`` and ``null`` are what they look like
and anything else is a string; it is read as the file is (`gateway.config.strict_yaml`). The result is validated like the file, with the
same messages. Meant for trying things (``make run`` uses it), not for secrets:
a command line is visible to every user of the machine.
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
            value = yaml.load(text, Loader=StrictLoader) if text.strip() else ""  # noqa: S506 - a SafeLoader
        except yaml.constructor.ConstructorError as exc:
            errors.append(f"--set {key}: {exc.problem}")  # an octal number: refused as in the file
            continue
        except yaml.YAMLError:
            value = text
        if isinstance(value, (dict, list)):
            errors.append(f"--set {key}: only single values can be set, not a list or mapping")
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


def _key_part(pair: str) -> str:
    """The start of ``pair`` that could be a key, then "…" if more follows: what follows may be a
    value (``token:…``, the file's habit, or a space before ``=``), and values may be secrets."""
    end = _KEY_CHARS.match(pair).end()
    return pair[:end] + ("…" if end < len(pair) else "")
