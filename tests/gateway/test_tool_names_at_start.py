"""`agent.enabled_toolsets` and `agent.disabled_tools` must name what there is once the plugins have loaded:
a misspelt name silently kept a tool the operator meant to remove, or left every chat without a toolset."""

from __future__ import annotations

import pytest

from gateway.errors import StartupError
from gateway.host import AgentHost
from gateway.startup_errors import lasting
from gateway.testing import make_config
from tests.plugin_modules import plugin_module

LOUD = """
    def register(ctx):
        ctx.register_tool("shout", "Upper-case text.", {"type": "object"}, lambda args, ctx: "!", toolset="loud")
"""


async def start_error(config) -> str | None:
    host = AgentHost(config)
    try:
        await host.start()
    except StartupError as exc:
        return str(exc)
    finally:
        await host.close()
    return None


@pytest.mark.parametrize(("agent", "expected"), [
    ({"disabled_tools": ["execute-code", "write_file"]}, "agent.disabled_tools: no tool is called 'execute-code'; "
                                                         "the tools are: clarify, delegate_task, execute_code, "),
    ({"enabled_toolsets": ["memory", "memroy", "fle"]}, "agent.enabled_toolsets: no toolset is called 'fle' or "
                                                        "'memroy'; the toolsets are: clarify, delegation, "),
])
async def test_a_name_no_tool_has_stops_the_start_naming_the_key(tmp_path, agent, expected):
    error = await start_error(make_config(tmp_path, agent=agent))
    assert error is not None and error.startswith(expected), error


async def test_the_plugins_tools_and_toolsets_count(tmp_path, monkeypatch):
    plugin_module(tmp_path, monkeypatch, "loud_plugin", LOUD)
    config = make_config(tmp_path, plugins=["loud_plugin"],
                         agent={"enabled_toolsets": ["loud", "memory"], "disabled_tools": ["shout", "memory"]})
    assert await start_error(config) is None


async def test_a_name_a_plugin_that_failed_to_load_may_have_had_is_a_warning(tmp_path, caplog):
    # Its tools are not there to enable or remove, and its own failure does not stop the start either.
    config = make_config(tmp_path, plugins=["no_such_plugin_module"], agent={"enabled_toolsets": ["loud"]})
    assert await start_error(config) is None
    warned = [r.getMessage() for r in caplog.records if r.name == "gateway.host"]
    assert any(m.startswith("agent.enabled_toolsets: no toolset is called 'loud'")
               and "(plugins that failed to load: plugin 'no_such_plugin_module': " in m for m in warned), warned


async def test_a_misspelt_name_is_an_error_no_restart_mends(tmp_path):
    # Every start fails alike until the file is mended: status 78, which the systemd unit does not restart on.
    host = AgentHost(make_config(tmp_path, agent={"disabled_tools": ["execute-code"]}))
    try:
        with pytest.raises(StartupError) as raised:
            await host.start()
    finally:
        await host.close()
    assert lasting(raised.value)
