"""``${VAR}`` expansion in the parsed YAML tree.

Expansion runs after YAML parsing on string scalars only (never on keys), so a
variable's value is always data: it cannot add keys or change the document's
structure. Syntax:

- ``${NAME}``: the variable's value; an error if it is unset.
- ``${NAME:-default}``: the default when the variable is unset *or empty* (as in
  the shell); the default is literal text up to the first ``}``.
- ``$${`` is a literal ``${``. Any other ``$`` is left alone, so passwords with a
  ``$`` in them need no escaping.

Strings that went through an expansion come back as `Expanded`, which lets the
validator accept ``port: ${PORT}`` for an integer field.

A variable that is set but empty (``TOKEN=`` in an env file) is no error by itself
(an optional setting reads it as unset), but the key it fed is noted, so that a
problem found with that key later names the variable (`name_empty_variables`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# `$${` first so the escape wins over a reference that starts right after it.
_TOKEN = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_REFERENCE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)


class Expanded(str):
    """A string that contained at least one ``${...}`` reference.

    Only these are coerced to int, float or bool (and "" to null) by the validator:
    a literal ``port: "8080"`` in the file stays a type error.
    """


class Failed:
    """Placeholder for a value whose expansion failed; its error is already reported."""

    def __repr__(self) -> str:
        return "<failed expansion>"


FAILED = Failed()


def expand_tree(
    node: object, env: Mapping[str, str], path: str, errors: list[str], empty: dict[str, list[str]] | None = None
) -> object:
    """A copy of ``node`` with every string scalar expanded; problems go to ``errors``, and the
    names of the set-but-empty variables each key took a value from to ``empty`` (by key)."""
    if isinstance(node, dict):
        return {key: expand_tree(value, env, _join(path, key), errors, empty) for key, value in node.items()}
    if isinstance(node, list):
        return [expand_tree(item, env, f"{path}[{i}]", errors, empty) for i, item in enumerate(node)]
    if isinstance(node, str):
        names: list[str] = []
        try:
            value = expand(node, env, names)
        except ValueError as exc:
            errors.append(f"{path}: {exc}")
            return FAILED
        if names and empty is not None:
            empty[path] = names
        return value
    return node


def name_empty_variables(messages: list[str], empty: Mapping[str, list[str]]) -> list[str]:
    """``messages`` with each one about a key that took a set-but-empty variable naming it: an
    error that says "required" or ``got ""`` points at the file, while the variable is what is wrong."""
    out = []
    for message in messages:
        names = list(dict.fromkeys(empty.get(message.partition(": ")[0], ())))
        if names:
            refs = " and ".join(f"${{{name}}}" for name in names)
            message += f" (from {refs}, which {'is' if len(names) == 1 else 'are'} set but empty)"
        out.append(message)
    return out


def bad_references(text: str) -> list[str]:
    """Each ``${...}`` in ``text`` that names no variable (``${123456:AAE…}``), as written: what the
    error about it shows (`gateway.config.loader` masks those of a secret setting)."""
    return [match.group(0) for match in _TOKEN.finditer(text)
            if match.group(1) is not None and _REFERENCE.fullmatch(match.group(1)) is None]


def expand(text: str, env: Mapping[str, str], empty: list[str] | None = None) -> str:
    """``text`` with references replaced; raises ValueError naming the bad reference. The name of
    each variable without a default that is set but empty is appended to ``empty``.

    Error messages name variables, never values, so secrets stay out of them.
    """
    if "${" not in text:
        return text
    out: list[str] = []
    pos = 0
    expanded = False
    for match in _TOKEN.finditer(text):
        out.append(text[pos : match.start()])
        pos = match.end()
        token = match.group(0)
        if token == "$${":
            out.append("${")
            continue
        if match.group(1) is None:
            raise ValueError("unterminated ${ (write $${ for a literal ${)")
        ref = _REFERENCE.fullmatch(match.group(1))
        if ref is None:
            raise ValueError(f"bad reference ${{{match.group(1)}}}: expected ${{NAME}} or ${{NAME:-default}}")
        name, default = ref.group(1), ref.group(2)
        value = env.get(name)
        if default is not None and not value:
            value = default
        elif value == "" and empty is not None:
            empty.append(name)
        if value is None:
            raise ValueError(
                f"environment variable {name} is not set (use ${{{name}:-default}} to give a default)"
            )
        out.append(value)
        expanded = True
    out.append(text[pos:])
    result = "".join(out)
    return Expanded(result) if expanded else result


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)
