"""`switchboard ask` delegates through ``delegation.backend``, as a chat's new session does."""

from __future__ import annotations

import json

import pytest

from gateway.cli import main
from tests.plugin_modules import plugin_module

LOOKUPS = """
from lifecycle import ChildRoute, RouteOption, RouteRefused

RESOLVED = []
ENDED = []


class Lookups:
    name = "lookups"
    description = "quick lookups on the default child model"

    def options(self):
        return [RouteOption("quick", "A quick lookup.")]

    def resolve(self, route):
        if route != "quick":
            raise RouteRefused(f"there is no route {route!r}")
        RESOLVED.append(route)
        return ChildRoute(route)


def child_stopped(**event):
    ENDED.append(event["child_status"])


def register(ctx):
    ctx.register_delegation_backend(Lookups())
    ctx.register_hook("subagent_stop", child_stopped)
"""


pytestmark = pytest.mark.usefixtures("cli_isolated")


def test_ask_routes_a_task_through_the_configured_plugin_backend(capsys, tmp_path, monkeypatch):
    plugin = plugin_module(tmp_path, monkeypatch, "lookups_backend", LOOKUPS)
    delegating = {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "look it up", "route": "quick"}}]}
    script = {"parent": [[delegating, {"text": "looked it up"}]], "leaf": [[{"text": "found it"}]]}
    (tmp_path / "script.json").write_text(json.dumps(script))
    (tmp_path / "switchboard.yaml").write_text(json.dumps({
        "model": {"provider": "scripted", "script": str(tmp_path / "script.json")},
        "plugins": ["lookups_backend"], "delegation": {"backend": "lookups"},
    }))
    assert main(["ask", "look something up"]) == 0
    assert capsys.readouterr().out == "looked it up\n"
    # On the default backend the route was refused ("… (default) has no routes") and no child ran.
    assert plugin.RESOLVED == ["quick"]
    assert plugin.ENDED == ["completed"]
