"""Plugins written by a test: a module in the test's own directory, imported fresh."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest


def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> ModuleType:
    """Write ``source`` as the module ``name`` in ``tmp_path``, importable for this test only, and
    import it afresh: the events and flags it holds are this test's, not an earlier one's."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module(name)
