from pathlib import Path

from gateway.config import Config, config_from_mapping
from gateway.config.example import render_example

import yaml

EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "switchboard.example.yaml"


def test_the_committed_example_is_generated_from_the_code():
    assert EXAMPLE.read_text(encoding="utf-8") == render_example(), (
        "deploy/switchboard.example.yaml is stale: run `python -m gateway.config.example`"
    )


def test_the_example_loads_cleanly_and_equals_the_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("SWITCHBOARD_STATE_DIR", str(tmp_path))
    config, warnings = config_from_mapping(yaml.safe_load(EXAMPLE.read_text()))
    assert warnings == []
    assert config == Config()
