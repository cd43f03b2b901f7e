"""/delegation ends a plugin backend's description with one full stop, or with the author's own
``!`` or ``?``: never ``..`` or ``!.``."""

from __future__ import annotations

import pytest

from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import openai_model
from tests.plugin_modules import plugin_module

BACKEND = """
from lifecycle import ChildRoute, RouteOption


class Described:
    name = "described"
    description = {description!r}

    def options(self):
        return [RouteOption("quick", "Quick lookups.")]

    def resolve(self, route):
        return ChildRoute(route)


def register(ctx):
    ctx.register_delegation_backend(Described())
"""


@pytest.mark.parametrize(("description", "shown"), [
    ("lookups on the default model", "lookups on the default model."),
    ("Lookups on the default model.", "Lookups on the default model."),
    ("Fast lookups!", "Fast lookups!"),
    ("Why wait?", "Why wait?"),
    ("and so on\u2026", "and so on\u2026"),
])
async def test_the_description_ends_in_one_mark(tmp_path, monkeypatch, llm, gateways, description, shown):
    plugin_module(tmp_path, monkeypatch, "described_backend", BACKEND.format(description=description))
    server = await llm()
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path, model=openai_model(server), plugins=["described_backend"],
                               delegation={"gateway_mode": "inline", "backend": "described"}), [chat])
    await chat.say("/delegation")
    await chat.wait_for(lambda: "command" in chat.kinds())
    assert chat.texts("command")[0].splitlines()[0] == f"Delegation here: described — {shown}"
