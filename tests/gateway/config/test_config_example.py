"""The configurations users copy — the example file and every one the docs show — load as written."""

import re
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
    # The variables a snippet needs set (no :-default) get a value of the shape every token accepts.
    env = {name: "123456:TEST-token" for name in re.findall(r"\$\{(\w+)\}", text)}
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
