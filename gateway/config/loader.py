"""Find, read and validate the configuration file.

Lookup order: an explicit path, ``$SWITCHBOARD_CONFIG``, ``./switchboard.yaml``,
``$XDG_CONFIG_HOME/switchboard/config.yaml`` (``~/.config/...`` when unset, none where there
is no home directory), and finally the built-in defaults with no file at all. See
docs/configuration.md.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import yaml

from gateway.config.delegation_rules import absolute_context_files, delegation_rules
from gateway.config.home import NoHome, expand_user, home, xdg_directory
from gateway.config.interpolate import Expanded, bad_references, expand_tree, name_empty_variables
from gateway.config.overrides import apply_overrides, name_setters, set_problems
from gateway.config.premises import founded
from gateway.config.rules import check_rules
from gateway.config.secret_values import MIN_LENGTH, env_secret_values, mask, secret_values
from gateway.config.sections import Config, default_state_dir
from gateway.config.strict_yaml import StrictLoader
from gateway.config.validate import NUL, NUL_IN_PATH, Validator, show
from gateway.config.worker_reads import unread_secrets, unread_set_problems, worker_part
from gateway.errors import ConfigError
from lifecycle.settings import TemporalTLSSettings


class LoadedConfig(NamedTuple):
    """A valid configuration and what was wrong with it but not fatal.

    A tuple, so ``config, warnings = load_config()`` works.
    """

    config: Config
    warnings: list[str]


def load_config(
    path: str | Path | None = None, *, env: Mapping[str, str] | None = None, overrides: Sequence[str] = (),
    worker: bool = False,
) -> LoadedConfig:
    """Load and validate the configuration; raises ConfigError listing every problem.

    ``env`` replaces ``os.environ`` for the lookup, ``${VAR}`` expansion and the
    state directory (tests pass a dict). A file that was named (argument or
    ``$SWITCHBOARD_CONFIG``) must exist; the implicit locations are optional.
    ``overrides`` are ``KEY=VALUE`` pairs set over the file (``--set``): an unknown key among them is an
    error, and a secret set by one a warning (`gateway.config.overrides.set_problems`); an error the file
    alone has not names the ``--set`` that brought it (`gateway.config.overrides.name_setters`).
    ``worker``: only what `switchboard worker` reads is expanded and checked (`gateway.config.worker_reads`);
    the rest stands at its defaults, and a pair setting it is a warning (an unknown key an error, as above).
    """
    env = os.environ if env is None else env
    source = locate_config(path, env)
    document = None if source is None else read_yaml(source)
    read = worker_part if worker else _whole
    try:
        whole = apply_overrides(document, overrides)
    except ConfigError as exc:
        raise ConfigError(exc.errors, source=source) from None
    raw = read(whole)
    masked = unread_secrets(whole, env) if worker else frozenset()  # what it does not read, still not shown
    if not overrides:
        return config_from_mapping(raw, source=source, env=env, masked=masked)
    unread_errors, unread_warnings = unread_set_problems(overrides) if worker else ([], [])
    try:
        config, warnings = config_from_mapping(raw, source=source, env=env, masked=masked)
    except ConfigError as exc:
        errors, warnings = set_problems(overrides, exc.errors, exc.warnings, Config)
        errors, warnings = unread_errors + errors, warnings + unread_warnings

        def errors_of(pairs: Sequence[str]) -> set[str]:
            try:
                config_from_mapping(read(apply_overrides(document, pairs)), source=source, env=env, masked=masked)
            except ConfigError as without:
                return set(without.errors)
            return set()

        raise ConfigError(name_setters(errors, overrides, errors_of), warnings, exc.source) from None
    errors, warnings = set_problems(overrides, [], warnings, Config)
    errors, warnings = unread_errors + errors, warnings + unread_warnings
    if errors:
        raise ConfigError(errors, warnings, source)
    return LoadedConfig(config, warnings)


def _whole(document: object) -> object:
    return document


def unread_secrets_of(source: Path | None, overrides: Sequence[str] = (),
                      env: Mapping[str, str] | None = None) -> list[str]:
    """The secret values of ``source`` with ``overrides`` set that `switchboard worker` does not read
    (`gateway.config.worker_reads.unread_secrets`), for its log to mask beside `render.config_secrets`'s."""
    try:
        document = apply_overrides(None if source is None else read_yaml(source), overrides)
    except ConfigError:  # read a moment ago by the loader: nothing more to mask than it found
        return []
    return sorted(unread_secrets(document, os.environ if env is None else env))


def locate_config(path: str | Path | None, env: Mapping[str, str]) -> Path | None:
    """The file to read, or None for built-in defaults; raises ConfigError for a missing named file."""
    if path is not None and str(path) != "":
        return _must_exist(Path(path), "")
    if named := env.get("SWITCHBOARD_CONFIG"):
        return _must_exist(Path(named), " (from $SWITCHBOARD_CONFIG)")
    config_home = xdg_directory(env, "XDG_CONFIG_HOME")
    if config_home is None and (user_home := home()) is not None:
        config_home = user_home / ".config"
    # No home directory, no user's file to look for (a container run with an arbitrary uid).
    user_file = [] if config_home is None else [config_home / "switchboard" / "config.yaml"]
    for candidate in (Path("switchboard.yaml"), *user_file):
        try:
            found = candidate.is_file()
            # Something else in the file's place (a directory, as Docker makes for a bind mount of a file
            # that did not exist; a link to nothing) was meant as the file: the defaults would run instead.
            there = not found and (candidate.is_symlink() or candidate.exists())
        except OSError as exc:  # a directory on the way the gateway's user may not enter: one may be there
            raise ConfigError([f"cannot look for a config file at {candidate.absolute()} ({exc.strerror}); give"
                               " the gateway's user access to its directory, or name the file with --config or"
                               " $SWITCHBOARD_CONFIG"]) from None
        if found:
            return candidate.absolute()
        if there:
            path = candidate.absolute()
            raise ConfigError([f"config file {path} {_what_is_there(path)}: put the file there, or name the"
                               " file to read with --config or $SWITCHBOARD_CONFIG"], source=path)
    return None


def _what_is_there(path: Path) -> str:
    """What is at ``path`` in place of a file, as the error about it says."""
    if path.is_symlink() and not path.exists():
        return f"is a symbolic link to {os.readlink(path)}, which does not exist"
    return "is a directory, not a file" if path.is_dir() else "is not a file"


def _must_exist(path: Path, origin: str) -> Path:
    try:
        path = expand_user(path).absolute()
    except NoHome as exc:
        raise ConfigError([f"config file {path}{origin} {exc}"]) from None
    try:
        exists, is_file = path.exists(), path.is_file()
    except OSError as exc:  # a directory on the way the gateway's user may not enter
        raise ConfigError([f"config file {path}{origin} cannot be read ({exc.strerror}); give the gateway's user"
                           " access to it and to the directories above it"], source=path) from None
    if not exists:
        raise ConfigError([f"config file {path}{origin} does not exist"], source=path)
    if not is_file:
        raise ConfigError([f"config file {path}{origin} is not a file"], source=path)
    return path


_YAML_HINTS = {
    # PyYAML's words for the commonest slips of a hand-written file, which say what, not why.
    "mapping values are not allowed here": "a value with a colon and a space in it needs quotes; or a key is"
                                           " indented under one that already has a value",
    "found character '\\t' that cannot start any token": "YAML indents with spaces, not tabs",
    **{f"found character '{c}' that cannot start any token": 'a value that starts with @, ` or % needs quotes, as in'
       ' "@alice"' for c in "@`%"},
}


MAX_BYTES = 1 << 20
"""The largest config file read. PyYAML reads a megabyte in seconds, but a file hundreds of times
that (a log or a dump named by mistake) took minutes and gigabytes before any error; and under it
no file spells out `MAX_VALUES` values without aliases."""


def read_yaml(source: Path) -> object:
    """The parsed document; raises ConfigError naming the file (and line) on failure."""
    text = _read_text(source)
    try:
        document = yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise ConfigError([f"{source}: invalid YAML: nested too deeply"], source=source) from None
    except yaml.reader.ReaderError as exc:
        # Its own words end in a second line naming "<unicode string>" and a character offset.
        line, column = _line_and_column(text, exc.position)
        raise ConfigError([f"{source}:{line}:{column}: invalid YAML: the character U+{exc.character:04X},"
                           " which YAML does not allow in a file: delete it"], source=source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(source)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        detail = f"{context}, {problem}" if context else problem
        detail += next((f" ({hint})" for start, hint in _YAML_HINTS.items() if problem.startswith(start)), "")
        raise ConfigError([f"{where}: invalid YAML: {detail}"], source=source) from exc
    if (problem := _too_big(document)) is not None:
        raise ConfigError([f"{source}: invalid YAML: {problem}"], source=source)
    return document


def _read_text(source: Path) -> str:
    """The file's text, at most `MAX_BYTES` of it read; raises ConfigError saying what is wrong with it."""
    try:
        with source.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        fix = "; give the gateway's user read access to it" if isinstance(exc, PermissionError) else ""
        raise ConfigError([f"{source}: cannot read ({exc.strerror}){fix}"], source=source) from None
    if len(data) > MAX_BYTES:
        raise ConfigError([f"{source}: over {MAX_BYTES:,} bytes, more than a config file holds: is it the right"
                           " file?"], source=source)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError([f"{source}: the file is UTF-16 text: save it as UTF-8"], source=source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line, column = data.count(b"\n", 0, exc.start) + 1, len(data[start:exc.start].decode(errors="replace")) + 1
        raise ConfigError([f"{source}:{line}:{column}: not UTF-8 text (the byte 0x{data[exc.start]:02x}): save the"
                           " file as UTF-8"], source=source) from None


def _line_and_column(text: str, position: int) -> tuple[int, int]:
    """1-based, as an editor counts them, of the character at ``position``."""
    return text.count("\n", 0, position) + 1, position - (text.rfind("\n", 0, position) + 1) + 1


MAX_DEPTH = 64
MAX_VALUES = 1_000_000
"""Values a configuration may spell out once its aliases are expanded: an alias is copied wherever it
is used, so nine anchors each used nine times over would stand for nine to the ninth values."""


def _too_big(document: object) -> str | None:
    """Why ``document`` is too deep or, its aliases expanded, too large to take; None if it is not.
    Each node is counted once (an alias's node is one object), so this costs no more than the file."""
    sizes: dict[int, int] = {}

    def size(node: object, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise _TooBig(f"nested deeper than {MAX_DEPTH} levels")
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            return 1
        if id(node) not in sizes:
            sizes[id(node)] = 1 + sum(size(child, depth + 1) for child in children)
            if sizes[id(node)] > MAX_VALUES:
                raise _TooBig(f"its aliases stand for over {MAX_VALUES:,} values")
        return sizes[id(node)]

    try:
        size(document, 0)
    except _TooBig as exc:
        return str(exc)
    return None


class _TooBig(Exception):
    pass


def config_from_mapping(
    raw: object, *, source: Path | None = None, env: Mapping[str, str] | None = None,
    masked: frozenset[str] = frozenset(),
) -> LoadedConfig:
    """Validate an already-parsed document (None means empty) into a Config; ``masked``: secret values from
    beyond ``raw`` (what a worker does not read), not shown in a message either."""
    env = os.environ if env is None else env
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        where = source if source is not None else "configuration"
        # A string is not shown: the file is of another kind (an env file, a token saved alone) and may hold secrets.
        got = "a string (not shown: it may hold secrets)" if isinstance(raw, str) else show(raw)
        raise ConfigError([f"{where}: the top level must be a mapping of sections, got {got}"], source=source)
    expansion_errors: list[str] = []
    # Expansion problems come first: they often explain a later "expected ..." one.
    empty_variables: dict[str, list[str]] = {}
    tree = _without_unset_state_dir(expand_tree(raw, env, "", expansion_errors, empty_variables))
    secrets = secret_values(Config, tree) | env_secret_values(env) | _bad_references_in_secrets(raw) | masked
    validator = Validator(secrets, Config)
    validator.errors.extend(expansion_errors)
    # Config's own default state directory reads os.environ, and raises where there is no home directory:
    # `_state_dir` sets the real one from ``env`` below, its problem reported with the rest.
    config = validator.section(Config, tree, "", defaults={"state_dir": Path()})
    # Before the rules: they read the script file the start will read.
    config = _paths_in_config_dir(config, source, validator.errors)
    rule_errors, rule_warnings = check_rules(config)
    delegation_errors, delegation_warnings = delegation_rules(config, source)
    # What rests on a setting the validator refused (read at its default) would only echo its error.
    rule_errors = founded(rule_errors + delegation_errors, validator.errors)
    rule_warnings = founded(rule_warnings + delegation_warnings, validator.errors)
    rule_errors = _not_reported(validator.errors, [validator.as_in_file(error) for error in rule_errors])
    try:
        state_dir = _state_dir(config.state_dir if "state_dir" in tree else None, source, env)
    except ConfigError as exc:  # the default, where there is no home directory to put it under
        state_dir, rule_errors = config.state_dir, rule_errors + exc.errors
    errors = mask(name_empty_variables(validator.errors + rule_errors, empty_variables), secrets)
    warnings = mask(validator.warnings + rule_warnings, secrets)
    if errors:
        raise ConfigError(errors, warnings, source)
    config = absolute_context_files(config, source)
    return LoadedConfig(dataclasses.replace(config, state_dir=state_dir, source=source), warnings)


def _bad_references_in_secrets(raw: dict) -> frozenset[str]:
    """Each ``${...}`` naming no variable in a secret setting as written: its error would show a token
    pasted inside one, in place of the variable's name (``token: "${123456:AAE…}"``)."""
    return frozenset(ref for value in secret_values(Config, raw) for ref in bad_references(value)
                     if len(ref) >= MIN_LENGTH)


def _without_unset_state_dir(tree: dict) -> dict:
    """``tree`` without a ``state_dir`` left empty (``state_dir:``) or given an empty expansion
    (``${SD:-}``): both mean the default, as an empty expansion means unset wherever a setting may be."""
    value = tree.get("state_dir")
    if value is None or (isinstance(value, Expanded) and value == ""):
        return {key: item for key, item in tree.items() if key != "state_dir"}
    return tree


def _not_reported(reported: list[str], errors: list[str]) -> list[str]:
    """``errors`` less those about a key already ``reported`` or one under it: one report per key, so a
    token whose ${VAR} is unset is not "required" a second time, nor the keys of a mapping that was not one."""
    keys = {error.partition(": ")[0] for error in reported}

    def under_reported(key: str) -> bool:
        return any(key == bad or key.startswith((f"{bad}.", f"{bad}[")) for bad in keys)

    return [error for error in errors if not under_reported(error.partition(": ")[0])]


def _state_dir(configured: Path | None, source: Path | None, env: Mapping[str, str]) -> Path:
    """The config key wins, then the environment (see `default_state_dir`).

    A relative key is relative to the config file's directory, so a config file
    and its state can move together; with no file it is relative to the cwd.
    """
    if configured is None:
        return default_state_dir(env)
    return _in_config_dir(configured, source)


def _paths_in_config_dir(config: Config, source: Path | None, errors: list[str]) -> Config:
    """``config`` with agent.workspace, model.script and the Temporal TLS files read as state_dir is:
    ``~`` expanded, a relative path relative to the config file, not to wherever switchboard was started
    (/ for a service). A profile's context_files are likewise, in `absolute_context_files`. A ``~``
    that names no home directory is added to ``errors``."""
    agent, model, temporal = config.agent, config.model, config.lifecycle.temporal
    if agent.workspace:
        workspace = _text(_in_config_dir(_expanded(agent.workspace, "agent.workspace", errors), source))
        config = dataclasses.replace(config, agent=dataclasses.replace(agent, workspace=workspace))
    if model.script:
        script = _text(_in_config_dir(_expanded(model.script, "model.script", errors), source))
        config = dataclasses.replace(config, model=dataclasses.replace(model, script=script))
    if isinstance(temporal.tls, TemporalTLSSettings):
        tls = temporal.tls
        files = {key: _in_config_dir(path, source) for key in ("ca_file", "cert_file", "key_file")
                 if (path := getattr(tls, key)) is not None}  # the validator expanded ``~`` in a Path
        temporal = dataclasses.replace(temporal, tls=dataclasses.replace(tls, **files))
        lifecycle = dataclasses.replace(config.lifecycle, temporal=temporal)
        config = dataclasses.replace(config, lifecycle=lifecycle)
    return config


def _expanded(path: str, key: str, errors: list[str]) -> Path | None:
    """``path`` with ``~`` expanded; None, its problem added to ``errors``, for one that names no file
    (a NUL character, on which every use of it would raise)."""
    if NUL in path:
        errors.append(f"{key}: expected a path, got {show(path)} ({NUL_IN_PATH})")
        return None
    try:
        return expand_user(Path(path))
    except NoHome as exc:
        errors.append(f"{key}: {path} {exc}")
        return Path(path)


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _in_config_dir(path: Path | None, source: Path | None) -> Path | None:
    """``path`` made absolute: a relative one is relative to the config file's directory (the
    working directory with no file)."""
    if path is None:
        return None
    if not path.is_absolute() and source is not None:
        return source.parent / path
    return path.absolute()
