from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gateway.config import load_config


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home and an empty working directory, so no real config is ever read."""
    home = tmp_path / "home"
    cwd = tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("SWITCHBOARD_CONFIG", "SWITCHBOARD_STATE_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(cwd)
    return tmp_path


@pytest.fixture
def write(tmp_path: Path):
    def write(text: str, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def load(write):
    """Load YAML text from a file, with a given environment."""

    def load(text: str, env: dict[str, str] | None = None):
        return load_config(write(text), env=env or {})

    return load
