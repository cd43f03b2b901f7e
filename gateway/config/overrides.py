"""``--set KEY=VALUE`` on the command line: one setting changed for one run, over the file.

``KEY`` is a dotted key path (``agent.gateway_notify_interval``); ``VALUE`` is a
number, boolean or null when YAML reads it as one (``1``, ``2.5``, ``true``, ``null``,
read as the file is: `gateway.config.strict_yaml`), the text inside the quotes when it
is quoted, and else a string as written (``Be brief: one line``, ``my model #2``). The
result is validated like the file, with the same messages, but for an unknown key: the
file's is a warning, so that a file written for a newer version still loads, while a key
typed on the command line was typed for this version, and a misspelt one would leave its
setting silently as it was (`set_problems`). Meant for trying things (``make run`` uses
it), not for secrets: a command line is visible to every user of the machine, so a
secret set there, or a URL with a password or token, is warned about.
"""

from __future__ import annotations

import copy
import re
import urllib.parse
from collections.abc import Iterator, Sequence

import yaml

from gateway.config.secret_values import CREDENTIAL_NAMES, secret_values
from gateway.config.strict_yaml import StrictLoader
from gateway.errors import ConfigError

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
_KEY_CHARS = re.compile(r"[\w.-]*")
_VARIABLE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_ONLY_VARIABLES = re.compile(f"({_VARIABLE.pattern})+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_CREDENTIAL_NAME = re.compile(CREDENTIAL_NAMES, re.IGNORECASE)
_UNKNOWN_KEY = "unknown key"
"""How the validator's message about an unknown key goes on, after the key and its colon."""
_ENV_FALLBACK = {"model.api_key": "OPENAI_API_KEY", "model.transcription.api_key": "OPENAI_API_KEY"}
"""The variable each secret setting falls back to, unset (`gateway.config.secret_values.ENV_SECRETS`)."""
_MARK = "--set-secret-mark--"


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


def set_problems(pairs: Sequence[str], errors: Sequence[str], warnings: Sequence[str],
                 schema: type) -> tuple[list[str], list[str]]:
    """``errors`` and ``warnings`` of a configuration ``pairs`` were set over, as the command line makes them.
    An unknown key that a pair names, or that its key goes through (``servre`` of ``servre.port``), is an
    error naming the pair, and comes first: it was typed now, for this version. A pair setting a secret field
    of ``schema``, or a URL with credentials (`_url_credentials`), adds a warning, naming its key alone, unless
    its value (or the credential) is only ``${VAR}`` or unset."""
    keys = list(dict.fromkeys(key for key, _ in _pairs(pairs)))
    from_set, rest_errors, rest_warnings = [], [], []
    for messages, rest in ((errors, rest_errors), (warnings, rest_warnings)):
        for message in messages:
            key, _, detail = message.partition(": ")
            setters = [k for k in keys if k == key or k.startswith(f"{key}.")]
            if setters and detail.startswith(_UNKNOWN_KEY):
                named = detail if setters == [key] else detail.replace(_UNKNOWN_KEY, f'{_UNKNOWN_KEY} "{key}"', 1)
                from_set.append(f"--set {' and --set '.join(setters)}: {named}")
            else:
                rest.append(message)
    return from_set + rest_errors, rest_warnings + _secret_warnings(pairs, schema)


def from_set(error: str, pairs: Sequence[str]) -> bool:
    """Whether ``error``, of a configuration ``pairs`` were set over, is the command line's: it names a
    ``--set`` (`set_problems`, `apply_overrides`), or the key a pair set, whose value it refuses."""
    return error.startswith("--set ") or error.partition(": ")[0] in {key for key, _ in _pairs(pairs)}


def _secret_warnings(pairs: Sequence[str], schema: type) -> list[str]:
    warned, out = set(), []
    for key, text in _pairs(pairs):
        try:
            value = _value(text)
        except yaml.constructor.ConstructorError:
            continue
        if key in warned or value in (None, "") or (isinstance(value, str) and _ONLY_VARIABLES.fullmatch(value)):
            continue
        # The schema's own walk finds secret fields, through sections, unions and mappings of routes alike.
        tree: dict = {}
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _MARK
        if _MARK in secret_values(schema, tree):
            what = "a secret"
        elif isinstance(value, str) and _url_credentials(value):
            what = "a URL with a password or token"
        else:
            continue
        warned.add(key)
        variable = f", or leave it unset and set ${_ENV_FALLBACK[key]}" if key in _ENV_FALLBACK else ""
        out.append(f"--set {key}: {what} on the command line can be read by every user of this machine (in ps)"
                   f" and stays in the shell's history; put it in the config file, or there as ${{VAR}} read from"
                   f" the environment{variable}")
    return out


def _url_credentials(text: str) -> bool:
    """Whether a URL in ``text`` holds a credential, as the log's redaction and `config check` take one
    (`gateway.config.secret_values.url_credentials`): a password, a user name standing alone (a token,
    ``https://tk-…@proxy/v1``), a query or fragment parameter named like one; short ones too (that limit is
    the redaction's, for fear of mangling words), but not one that is only a ``${VAR}``."""
    for url in _URL.findall(text):
        try:
            parts = urllib.parse.urlsplit(_VARIABLE.sub("", url))
        except ValueError:  # a bracketed host left open: no user info to read
            continue
        given = [parts.password if parts.password is not None else parts.username]
        for part in f"{parts.query}&{parts.fragment}".split("&"):
            name, _, value = part.partition("=")
            if _CREDENTIAL_NAME.search(urllib.parse.unquote_plus(name)):
                given.append(value)
        if any(given):
            return True
    return False


def _pairs(pairs: Sequence[str]) -> Iterator[tuple[str, str]]:
    """The key and value text of each pair that is ``KEY=VALUE``."""
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if sep and _KEY.fullmatch(key := key.strip()):
            yield key, text


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
