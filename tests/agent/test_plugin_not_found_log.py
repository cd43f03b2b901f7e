"""A plugin that is not there is logged as its one line (what was not found, where Python looked): the traceback
of importlib's own frames under it said nothing more. A module that a found plugin imports and that is not there
keeps its traceback, which leads to the plugin's line that imports it."""

from __future__ import annotations

import logging
import sys

from agent import HookRegistry, PluginHost, ToolRegistry


async def failure_record(caplog, monkeypatch, module: str) -> logging.LogRecord:
    monkeypatch.delitem(sys.modules, module, raising=False)
    host = PluginHost(ToolRegistry(), HookRegistry())
    with caplog.at_level(logging.ERROR, logger="agent.plugins"):
        await host.load([module])
    [record] = [r for r in caplog.records if r.name == "agent.plugins" and r.levelno == logging.ERROR]
    return record


async def test_a_plugin_not_found_is_logged_without_a_traceback(caplog, monkeypatch):
    record = await failure_record(caplog, monkeypatch, "surely_absent_plugin_z3")
    assert record.getMessage().startswith("plugin 'surely_absent_plugin_z3': import failed: ModuleNotFoundError: "
                                          "No module named 'surely_absent_plugin_z3'; Python looked in ")
    assert record.exc_info is None
    assert "Traceback" not in caplog.text


async def test_a_plugin_missing_from_its_package_is_logged_without_a_traceback(tmp_path, caplog, monkeypatch):
    (tmp_path / "z3_own_pkg").mkdir()
    (tmp_path / "z3_own_pkg" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "z3_own_pkg", raising=False)
    record = await failure_record(caplog, monkeypatch, "z3_own_pkg.sub.plugin")
    assert "No module named 'z3_own_pkg.sub'" in record.getMessage()
    assert record.exc_info is None


async def test_a_missing_dependency_of_the_plugin_keeps_its_traceback(tmp_path, caplog, monkeypatch):
    (tmp_path / "z3_needy_plugin.py").write_text("import surely_not_installed_dep_z3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    record = await failure_record(caplog, monkeypatch, "z3_needy_plugin")
    assert "the plugin needs surely_not_installed_dep_z3" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], ModuleNotFoundError)
    assert f'File "{tmp_path / "z3_needy_plugin.py"}", line 1' in caplog.text
