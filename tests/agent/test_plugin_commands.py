"""What a plugin's command must be for the platforms' command menus to take it."""

import textwrap

import pytest

from agent import HookRegistry, PluginHost, ToolRegistry


@pytest.mark.parametrize(("description", "loads"), [("Answers pong.", True), (None, True), (42, False)])
async def test_a_command_description_that_is_no_string_fails_its_plugin(tmp_path, monkeypatch, description, loads):
    # aiogram's BotCommand refused a description that was no string, and the Telegram adapter's start
    # raised with it: one plugin's typo kept the whole gateway from starting.
    module = f"command_plugin_{'ok' if loads else 'bad'}_{type(description).__name__}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(f"""
        def register(ctx):
            ctx.register_command("ping", lambda args, c: "pong", {description!r})
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = PluginHost(ToolRegistry(), HookRegistry())
    await plugins.load([module])
    if loads:
        assert (plugins.loaded, plugins.failures) == ([module], [])
        assert plugins.commands["ping"].description == (description or "")
    else:
        assert (plugins.loaded, plugins.commands) == ([], {})
        assert [str(f) for f in plugins.failures] == [
            f"plugin {module!r}: command /ping: its description must be a string, not int"]
