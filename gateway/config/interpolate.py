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


def expand_tree(node: object, env: Mapping[str, str], path: str, errors: list[str]) -> object:
    """A copy of ``node`` with every string scalar expanded; problems go to ``errors``."""
    if isinstance(node, dict):
        return {key: expand_tree(value, env, _join(path, key), errors) for key, value in node.items()}
    if isinstance(node, list):
        return [expand_tree(item, env, f"{path}[{i}]", errors) for i, item in enumerate(node)]
    if isinstance(node, str):
        try:
            return expand(node, env)
        except ValueError as exc:
            errors.append(f"{path}: {exc}")
            return FAILED
    return node


def expand(text: str, env: Mapping[str, str]) -> str:
    """``text`` with references replaced; raises ValueError naming the bad reference.

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
