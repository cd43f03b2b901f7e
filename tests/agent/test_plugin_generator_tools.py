"""A plugin tool whose handler yields: called, it only makes a generator, so its body never runs."""

import textwrap

import pytest

from agent import HookRegistry, PluginHost, ToolRegistry

YIELDING = """
SENT = []

def send(args, ctx):
    SENT.append(args)
    yield "sent"

async def fetch(args, ctx):
    yield "fetched"

def register(ctx):
    ctx.register_tool({name!r}, "x", {{"type": "object"}}, {handler})
"""


@pytest.mark.parametrize("handler", ["send", "fetch"])
async def test_a_tool_handler_that_yields_fails_its_plugin_where_it_is_registered(tmp_path, monkeypatch, handler):
    """It was registered, and each call answered the model ``"<generator object send at 0x…>"`` as if it had run."""
    module = f"yielding_{handler}_plugin"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(YIELDING.format(name=handler, handler=handler)))
    monkeypatch.syspath_prepend(str(tmp_path))
    host = PluginHost(ToolRegistry(), HookRegistry())
    await host.load([module])
    assert host.tools.get(handler) is None
    assert [str(f) for f in host.failures] == [
        f"plugin {module!r}: tool {handler!r} has a generator as its handler (it yields): its body would never run;"
        " return the result instead"]
