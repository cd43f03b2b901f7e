"""``${VAR}`` expansion in the parsed YAML tree.

Expansion runs after YAML parsing on string scalars only (never on keys), so a
variable's value is always data: it cannot add keys or change the document's
structure. Syntax:

- ``${NAME}``: the variable's value; an error if it is unset.
- ``${NAME:-default}``: the default when the variable is unset *or empty* (as in
  the shell); the default is literal text up to the first ``}``, and may not hold a ``${``
  (``${A:-${B}}``, a nesting the shell allows, would be the text ``${B}``).
- ``$${`` is a literal ``${``. Any other ``$`` is left alone, so passwords with a
  ``$`` in them need no escaping.

Strings that went through an expansion come back as `Expanded`, which lets the
validator accept ``port: ${PORT}`` for an integer field.

A variable that is set but empty (``TOKEN=`` in an env file) is no error by itself
(an optional setting reads it as unset), but the key it fed is noted, so that a
problem found with that key later names the variable (`name_empty_variables`).

A variable's value is data, taken as written: the text ``\\ud83d\\ude00`` in it stays those twelve
characters (YAML's escapes are the file's). A byte of it that is not UTF-8 (Latin-1's ``é``), which Python
reads from the environment as half of a UTF-16 pair (U+DC80..U+DCFF), is an error naming the variable: an
HTTP client dropped it from a token silently, `config check` showed it as an escape no file could give back,
and a prompt holding it could not be sent.

The text the tree comes to, each alias copied out and each reference expanded, is bounded
(`MAX_TEXT`): a long value aliased a thousand times over, or a variable referred to a thousand
times in one value, otherwise took gigabytes from a file of kilobytes, in the gateway and in
`config check`'s output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# `$${` first so the escape wins over a reference that starts right after it.
_TOKEN = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_REFERENCE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNDECODED = re.compile("[\udc80-\udcff]")  # how os.environ (surrogateescape) keeps a byte that is not UTF-8


class Expanded(str):
    """A string that contained at least one ``${...}`` reference.

    Only these are coerced to int, float or bool (and "" to null) by the validator:
    a literal ``port: "8080"`` in the file stays a type error.
    """


MAX_TEXT = 10_000_000
"""Characters of text a configuration may come to, each alias copied out and each ``${VAR}``
expanded: far over any real one, also with long prompts in it."""

TOO_MUCH_TEXT = (f"the configuration comes to over {MAX_TEXT:,} characters of text by this key, its aliases"
                 " copied out and its ${VAR}s expanded: no setting takes so much; look at what is aliased or"
                 " expanded here")


class TooMuchText(ValueError):
    """The text would pass what is left of `MAX_TEXT`."""


class _Budget:
    """What is left of `MAX_TEXT` while one tree is expanded; ``spent`` once it ran out."""

    def __init__(self) -> None:
        self.left = MAX_TEXT
        self.spent = False


class Failed:
    """Placeholder for a value whose expansion failed; its error is already reported."""

    def __repr__(self) -> str:
        return "<failed expansion>"


FAILED = Failed()


def expand_tree(
    node: object, env: Mapping[str, str], path: str, errors: list[str], empty: dict[str, list[str]] | None = None
) -> object:
    """A copy of ``node`` with every string scalar expanded; problems go to ``errors``, and the
    names of the set-but-empty variables each key took a value from to ``empty`` (by key). Past
    `MAX_TEXT`, one error names the key it ran out at, and every string from there on is `FAILED`."""
    return _expand_node(node, env, path, errors, empty, _Budget())


def _expand_node(
    node: object, env: Mapping[str, str], path: str, errors: list[str], empty: dict[str, list[str]] | None,
    budget: _Budget,
) -> object:
    if isinstance(node, dict):
        return {key: _expand_node(value, env, _join(path, key), errors, empty, budget) for key, value in node.items()}
    if isinstance(node, list):
        return [_expand_node(item, env, f"{path}[{i}]", errors, empty, budget) for i, item in enumerate(node)]
    if isinstance(node, str):
        if budget.spent:
            return FAILED
        names: list[str] = []
        try:
            value = expand(node, env, names, limit=budget.left)
        except TooMuchText as exc:
            budget.spent = True
            errors.append(f"{path}: {exc}")
            return FAILED
        except ValueError as exc:
            errors.append(f"{path}: {exc}")
            return FAILED
        budget.left -= len(value)
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


def expand(text: str, env: Mapping[str, str], empty: list[str] | None = None, *, limit: int | None = None) -> str:
    """``text`` with references replaced; raises ValueError naming the bad reference, and
    `TooMuchText` (before building it) for a result longer than ``limit``. The name of each
    variable without a default that is set but empty is appended to ``empty``.

    Error messages name variables, never values, so secrets stay out of them.
    """
    if limit is not None and len(text) > limit:  # its references' values can only add to it
        raise TooMuchText(TOO_MUCH_TEXT)
    if "${" not in text:
        return text
    out: list[str] = []
    length = 0
    pos = 0
    expanded = False
    for match in _TOKEN.finditer(text):
        out.append(text[pos : match.start()])
        length += match.start() - pos
        pos = match.end()
        token = match.group(0)
        if token == "$${":
            out.append("${")
            length += 2
            continue
        if match.group(1) is None:
            raise ValueError("unterminated ${ (write $${ for a literal ${)")
        ref = _REFERENCE.fullmatch(match.group(1))
        if ref is None:
            raise ValueError(f"bad reference ${{{match.group(1)}}}: expected ${{NAME}} or ${{NAME:-default}}")
        name, default = ref.group(1), ref.group(2)
        if default is not None and "${" in default:
            # ``${A:-${B}}`` read as the fallback "${B" then "}": a secret (a webhook's) became the
            # text "${B}", which anyone may guess. Not shown: the fallback may be a secret written in.
            raise ValueError(f"the fallback of ${{{name}:-…}} holds a ${{, but a fallback is text, taken as written:"
                             " a variable in it is not expanded; write the text itself")
        value = env.get(name)
        if value and (half := _SURROGATE.search(value)):
            raise ValueError(_not_text(name, half.group()))
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
        length += len(value)
        if limit is not None and length > limit:
            raise TooMuchText(TOO_MUCH_TEXT)
    out.append(text[pos:])
    result = "".join(out)
    return Expanded(result) if expanded else result


def _not_text(name: str, half: str) -> str:
    """Why the value of variable ``name`` holding ``half`` is refused, never showing the value: it may be a secret."""
    if _UNDECODED.fullmatch(half):
        return (f"environment variable {name} holds a byte that is not UTF-8, which no setting can use (a client"
                " would drop or fail on it): set it as UTF-8 text")
    return f"environment variable {name} holds half of a UTF-16 pair, which no setting can use: set it as text"


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)
