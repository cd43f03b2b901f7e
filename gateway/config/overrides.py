"""``--set KEY=VALUE`` on the command line: one setting changed for one run, over the file.

``KEY`` is a dotted key path (``agent.gateway_notify_interval``); ``VALUE`` is a
number, boolean or null when YAML reads it as one (``1``, ``2.5``, ``true``, ``null``,
read as the file is: `gateway.config.strict_yaml`), the text inside the quotes when it
is quoted, and else a string as written (``Be brief: one line``, ``my model #2``). The
result is validated like the file, with the same messages, but for an unknown key: the
file's is a warning, so that a file written for a newer version still loads, while a key
typed on the command line was typed for this version, and a misspelt one would leave its
setting silently as it was (`set_problems`). An error that the file alone does not have, which a
pair brings about with the file's other keys (``platforms.telegram.enabled=true`` and no token in the
file), ends with the ``--set`` that brought it (`name_setters`). Meant for trying things (``make run`` uses
it), not for secrets: a command line is visible to every user of the machine, so a
secret set there, or a URL with a password or token, is warned about.
"""

from __future__ import annotations

import copy
import re
import urllib.parse
from collections.abc import Callable, Iterator, Sequence

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
_NOT_KEYS = re.compile(r"expected (.+), got a mapping")
"""The validator's message about a setting given keys under it (``--set server.port.x=1``)."""
_ONLY_WITH = re.compile(r" \(only with --set [\w.-]+(?: (?:and|or) --set [\w.-]+)*\)\Z")
"""How `name_setters` ends an error that a pair brought about with the file's other keys."""
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
            errors.append(f"--set {_key_part(pair)}: expected KEY=VALUE with a dotted key, e.g. server.port=9000"
                          f"{_key_fault(key) if sep else ''}")
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
    error naming the pair, and comes first: it was typed now, for this version; so is a setting that a pair's key
    goes through (``server.port`` of ``server.port.x``), which the pair made a mapping. A pair setting a secret field
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
            elif (through := [k for k in setters if k != key]) and (expected := _NOT_KEYS.fullmatch(detail)):
                # It read "server.port: expected an integer …, got a mapping", counted as the file's.
                from_set.append(f"--set {' and --set '.join(through)}: {key} takes {expected[1]}, not keys under it")
            else:
                rest.append(message)
    return from_set + rest_errors, rest_warnings + _secret_warnings(pairs, schema)


def from_set(error: str, pairs: Sequence[str]) -> bool:
    """Whether ``error``, of a configuration ``pairs`` were set over, is the command line's: it names a
    ``--set`` (`set_problems`, `apply_overrides`), or the key a pair set, whose value it refuses."""
    return error.startswith("--set ") or error.partition(": ")[0] in {key for key, _ in _pairs(pairs)}


def only_with_set(error: str) -> bool:
    """Whether ``error`` is one a pair brought about with the file's other keys (`name_setters`): the file's
    and the command line's both, neither alone."""
    return _ONLY_WITH.search(error) is not None


def name_setters(errors: Sequence[str], pairs: Sequence[str],
                 errors_of: Callable[[Sequence[str]], set[str]]) -> list[str]:
    """``errors`` of a configuration ``pairs`` were set over; each that is not the command line's own
    (`from_set`), about a setting (`_about`) the configuration without the pairs has none about, ends with the
    ``--set`` of the keys that bring it about: ``platforms.telegram.token: required when
    platforms.telegram.enabled is true (only with --set platforms.telegram.enabled)``. Without it, such an error
    read as the file's, and its operator searched the file for a mistake the command line made. ``errors_of``
    gives the errors of the configuration with only the pairs it is given set (all of them are ``KEY=VALUE``).
    The keys named are those without whose pairs the error goes; where none is (two bring it, each alone), those
    whose pairs alone bring it, with "or"."""
    def settings_of(pairs: Sequence[str]) -> set[str]:
        return {_about(error) for error in errors_of(pairs)}

    made = [error for error in errors if not from_set(error, pairs)]
    if not made or not (made := {error for error in made if _about(error) not in settings_of([])}):
        return list(errors)
    keys = list(dict.fromkeys(key for key, _ in _pairs(pairs)))

    def of_key(key: str) -> list[str]:
        return [pair for pair in pairs if pair.partition("=")[0].strip() == key]

    # One key needs no second look: without it there are no pairs, as errors_of([]) was.
    without = {key: settings_of([pair for pair in pairs if pair not in of_key(key)])
               for key in keys} if len(keys) > 1 else {}
    out = []
    for error in errors:
        if error in made:
            needed, joint = [key for key in keys if _about(error) not in without.get(key, ())], " and --set "
            if not needed:
                needed, joint = [key for key in keys if _about(error) in settings_of(of_key(key))] or keys, " or --set "
            error = f"{error} (only with --set {joint.join(needed)})"
        out.append(error)
    return out


def _about(error: str) -> str:
    """The setting ``error`` is about, the text before its first ": ". Errors are told apart by it, not by all their
    text: a value they quote may be a pair's (``server.host ("10.0.0.5")``) where the file's own error about the same
    setting quotes the file's, and that one was told "only with --set server.host", which removed, still failed."""
    return error.partition(": ")[0]


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
    """The start of ``pair`` that could be a key, with the ``=`` that ends it, then "…" if more follows:
    what follows may be a value (``token:…``, the file's habit, or a space before ``=``), and values may
    be secrets."""
    end = _KEY_CHARS.match(pair).end()
    end += pair.startswith("=", end)  # the key's end shown: "server.=…", not "server.…"
    return pair[:end] + ("…" if end < len(pair) else "")


def _key_fault(key: str) -> str:
    """What is wrong with ``key``, typed before an ``=``, in parentheses, where it is a slip of the dots; else ""."""
    if not key:
        return " (the key is missing)"
    if key.startswith(".") or key.endswith("."):
        return f" (the key {'starts' if key.startswith('.') else 'ends'} with a dot)"
    return " (the key has two dots in a row)" if ".." in key else ""
