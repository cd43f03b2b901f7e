"""A plugin that Python cannot find is told with where Python looked and what to do (a folder on PYTHONPATH, or the
package installed); one found whose own import needs a module that is not installed is told as that dependency
missing, without that hint. Before, both read only "No module named …": a plugin's author who started the gateway
from the plugin's own folder (which a ``switchboard`` command does not search) was left to guess."""

from __future__ import annotations

import os
import sys

from agent import HookRegistry, PluginHost, ToolRegistry


async def failure(monkeypatch, module: str) -> str:
    monkeypatch.delitem(sys.modules, module, raising=False)
    host = PluginHost(ToolRegistry(), HookRegistry())
    await host.load([module])
    [failed] = host.failures
    return str(failed)


async def test_a_plugin_not_found_names_where_python_looked_and_what_to_do(tmp_path, monkeypatch):
    (tmp_path / "here_plugin.py").write_text("def register(ctx):\n    pass\n")
    monkeypatch.chdir(tmp_path)  # its folder is the current directory, which is not on the path
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p and os.path.abspath(p) != str(tmp_path)])
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "nowhere"))
    message = await failure(monkeypatch, "here_plugin")
    assert message.startswith("plugin 'here_plugin': import failed: ModuleNotFoundError: No module named "
                              "'here_plugin'; ")  # the documented text, then the hint
    assert f"the folders on PYTHONPATH ({tmp_path / 'nowhere'}: no such folder)" in message
    assert f"the packages installed in {sys.prefix}, not in the current directory ({tmp_path})" in message
    assert message.endswith("put the folder that holds here_plugin on PYTHONPATH, or install it into that "
                            "environment")


async def test_a_plugin_not_found_says_when_the_current_directory_was_searched(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend("")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    message = await failure(monkeypatch, "absent_plugin.tools")
    assert "No module named 'absent_plugin'; Python looked in the folders on PYTHONPATH (not set)" in message
    assert f"and in the current directory ({tmp_path})" in message
    assert "holds absent_plugin on PYTHONPATH" in message


async def test_a_missing_dependency_of_the_plugin_names_it_and_not_the_path(tmp_path, monkeypatch):
    (tmp_path / "needy_plugin.py").write_text("import surely_not_installed_dep\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    message = await failure(monkeypatch, "needy_plugin")
    assert message == (
        "plugin 'needy_plugin': import failed: ModuleNotFoundError: No module named 'surely_not_installed_dep' "
        f"(at {tmp_path / 'needy_plugin.py'}:1); the plugin needs surely_not_installed_dep, which is not installed "
        f"in {sys.prefix}: install the package that provides it")
    assert "PYTHONPATH" not in message


async def test_a_module_missing_from_the_plugins_own_package_names_where_the_package_was_found(tmp_path, monkeypatch):
    (tmp_path / "own_pkg").mkdir()
    (tmp_path / "own_pkg" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "own_pkg", raising=False)
    message = await failure(monkeypatch, "own_pkg.plugin")
    assert message.endswith(f"No module named 'own_pkg.plugin'; own_pkg was found in {tmp_path / 'own_pkg'}, "
                            "and holds no plugin")
    assert "PYTHONPATH" not in message
