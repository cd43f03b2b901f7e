"""The configurations users copy — the example file and every one the docs show — load as written, and
every setting the docs name exists."""

import dataclasses
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from gateway.config import Config, ConfigError, config_from_mapping, load_config
from gateway.config.example import render_example

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "deploy" / "switchboard.example.yaml"
SCALE_OUT = ROOT / "deploy" / "scale-out.yaml"
COMPOSE = ROOT / "deploy" / "compose.scale-out.yaml"
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
SECTIONS = frozenset(Config.__dataclass_fields__)


def test_the_committed_example_is_generated_from_the_code():
    assert EXAMPLE.read_text(encoding="utf-8") == render_example(), (
        "deploy/switchboard.example.yaml is stale: run `python -m gateway.config.example`"
    )


def test_the_example_loads_cleanly_and_equals_the_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("SWITCHBOARD_STATE_DIR", str(tmp_path))
    config, warnings = config_from_mapping(yaml.safe_load(EXAMPLE.read_text()))
    assert warnings == []
    assert config == Config()


def test_the_scale_out_config_loads_in_the_containers_compose_starts(tmp_path):
    compose = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    env = compose["x-switchboard"]["environment"]
    for name in ("gateway", "worker"):
        assert f"./scale-out.yaml:{env['SWITCHBOARD_CONFIG']}:ro" in compose["services"][name]["volumes"]
    # compose passes on what the operator sets (`${VAR:?…}` refuses to start without it): any value will do.
    env = {key: "123456:TEST-token" if "${" in value else value for key, value in env.items()}
    try:
        _, warnings = load_config(SCALE_OUT, env={**env, "SWITCHBOARD_STATE_DIR": str(tmp_path)})
    except ConfigError as exc:
        raise AssertionError("deploy/scale-out.yaml does not load:\n" + "\n".join(exc.errors)) from None
    assert warnings == []


def documented_configs():
    """Each ```yaml block of the docs that is a Switchboard configuration (not, say, Prometheus')."""
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in re.finditer(r"^```yaml\n(.*?)^```", text, re.S | re.M):
            raw = yaml.safe_load(block.group(1))
            if isinstance(raw, dict) and SECTIONS & set(raw):
                where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, block.start()) + 1}"
                yield pytest.param(block.group(1), id=where)


@pytest.mark.parametrize("text", list(documented_configs()))
def test_every_configuration_the_docs_show_loads_without_errors_or_unknown_keys(text, tmp_path):
    # The variables a snippet needs set (no :-default) get a value of the shape every token accepts,
    # each its own (two webhook routes may not share a secret).
    env = {name: f"123456:TEST-token-{n}" for n, name in enumerate(re.findall(r"\$\{(\w+)\}", text))}
    raw = yaml.safe_load(text)
    for profile in ((raw.get("delegation") or {}).get("profile_routes") or {}).values():
        for name in profile.get("context_files") or ():  # the reader's own files, next to the config
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text("checklist", encoding="utf-8")
    try:
        _, warnings = config_from_mapping(raw, source=tmp_path / "switchboard.yaml", env=env)
    except ConfigError as exc:
        raise AssertionError("a configuration the docs show does not load:\n" + "\n".join(exc.errors)) from None
    assert [w for w in warnings if "unknown key" in w or "ignored" in w] == []


def setting_paths(cls: type, prefix: str = ""):
    """Every key the schema accepts, dotted; ``<name>`` stands for a key the user chooses."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        yield prefix + f.name
        tp = hints[f.name]
        for tp in typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,):
            if typing.get_origin(tp) is Mapping:
                yield f"{prefix}{f.name}.<name>"
                yield from setting_paths(typing.get_args(tp)[1], f"{prefix}{f.name}.<name>.")
            elif dataclasses.is_dataclass(tp):
                yield from setting_paths(tp, f"{prefix}{f.name}.")


def names_a_setting(written: str, path: str) -> bool:
    """``written`` as the docs spell it: ``<p>``, ``<k>``… stand for one key, ``*`` for the rest."""
    written_parts, parts = written.split("."), path.split(".")
    for word, part in zip(written_parts, parts):
        if word == "*":
            return True
        if word != part and not word.startswith("<") and part != "<name>":
            return False
    return len(written_parts) == len(parts)


def python_name(written: str) -> bool:
    """A module of this repository, or a class or constant in one (``lifecycle.HostView``)."""
    parts = written.split(".")
    return (any(part[:1].isupper() for part in parts) or ROOT.joinpath(*parts).with_suffix(".py").exists()
            or ROOT.joinpath(*parts, "__init__.py").exists())


def test_every_setting_the_docs_name_exists():
    paths = list(setting_paths(Config))
    dotted = re.compile(rf"`((?:{'|'.join(SECTIONS)})(?:\.[\w<>*-]+)+)([:=][^`]*)?`")
    for doc in DOCS:
        prose = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.S | re.M)
        for match in dotted.finditer(prose):
            written, rest = match.groups()
            if "unknown key" in (rest or "") or written.endswith(".py") or python_name(written):
                continue  # a misspelling shown on purpose, a file, a Python name
            assert any(names_a_setting(written, path) for path in paths), (
                f"{doc.relative_to(ROOT)} names `{written}`, which is no setting"
            )


def schema_defaults(cls: type = Config, prefix: str = ""):
    """``(dotted path, default)`` of every setting with a fixed default; ``<name>`` as in `setting_paths`."""
    hints = typing.get_type_hints(cls)
    instance = cls()
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        tp, value = hints[f.name], getattr(instance, f.name)
        members = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
        if dataclasses.is_dataclass(value):
            yield from schema_defaults(type(value), f"{prefix}{f.name}.")
        elif any(typing.get_origin(m) is Mapping for m in members):
            entry = next(typing.get_args(m)[1] for m in members if typing.get_origin(m) is Mapping)
            if dataclasses.is_dataclass(entry):
                yield from schema_defaults(entry, f"{prefix}{f.name}.<name>.")
        elif f.name != "state_dir":  # its default depends on the environment
            yield prefix + f.name, value


MIB = 1024 * 1024
LITERAL = r"`?(-?[\d,]+(?:\.\d+)?(?!\w|\.\d)|true|false|\[\]|unset|—|\w[\w.:/-]*)`?(?: (MB))?"
TABLE_ROW = re.compile(rf"^\| `([\w.<>]+)` \| {LITERAL}(?: \(.*?\))? \|", re.M)
PROSE = re.compile(rf"(?:`([a-z_]+(?:\.[\w<>]+)+)`(?: /|,) )?`([a-z_]+(?:\.[\w<>]+)+)`(?:,? \(?| [\w ]{{0,24}} \()default {LITERAL}")
"""``key`` (default 3), ``key``, default 3, ``key`` seconds (default 3), or two at once:
``server.host`` / ``server.port`` (default ``host:port``)."""


def documented_defaults():
    """``(where, dotted key, default as written)`` for each default the docs state in a table or in prose."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
        page = doc.relative_to(ROOT)
        for match in TABLE_ROW.finditer(prose):
            key = match.group(1)
            if "." not in key and doc.parent.name == "platforms":  # a platform page's table: its own keys
                key = f"platforms.{doc.stem}.{key}"
            yield f"{page}: {match.group(0)}", key, match.group(2), match.group(3)
        for match in PROSE.finditer(re.sub(r"\s+", " ", prose)):
            first, key, written, unit = match.groups()
            if first is not None:
                first_written, _, written = written.rpartition(":")
                yield f"{page}: {match.group(0)}", first, first_written, None
            yield f"{page}: {match.group(0)}", key, written, unit


def as_written(value: object) -> object:
    """A schema default as the docs would write it."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple) and not value:
        return "[]"
    return value


def test_every_default_the_docs_state_is_the_schema_default():
    defaults = dict(schema_defaults())
    checked = 0
    for where, key, written, unit in documented_defaults():
        matches = [path for path in defaults if names_a_setting(key, path)]
        if not matches or written.startswith(tuple(SECTIONS)):
            continue  # no setting (a metric, a payload field), or a default that is another setting
        written = "unset" if written == "—" else written
        for path in matches:
            default = as_written(defaults[path])
            if isinstance(default, (int, float)) and not isinstance(default, bool):
                number = float(written.replace(",", "")) * (MIB if unit else 1)
                assert number == default, f"{where}: the docs say {written}{' MB' if unit else ''}, {path} is {default}"
            else:
                assert written == default, f"{where}: the docs say {written}, {path} is {default}"
            checked += 1
    assert checked >= 30  # the patterns still find the docs' defaults


def undocumented(cls: type = Config, prefix: str = ""):
    """Dotted paths of the settings with no ``doc``, the line the example file shows above each key."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        if not f.metadata.get("doc", "").strip():
            yield prefix + f.name
        tp = hints[f.name]
        for member in typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,):
            if typing.get_origin(member) is Mapping and dataclasses.is_dataclass(typing.get_args(member)[1]):
                yield from undocumented(typing.get_args(member)[1], f"{prefix}{f.name}.<name>.")
            elif dataclasses.is_dataclass(member):
                yield from undocumented(member, f"{prefix}{f.name}.")


def test_every_setting_the_schema_accepts_is_documented():
    # The README sends readers to the example file for "every key with its default": each key there
    # carries its doc line (the example is generated, and checked above to be current).
    assert "deploy/switchboard.example.yaml" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert list(undocumented()) == []
