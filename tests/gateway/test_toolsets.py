"""Safe by default: chat platforms get no code execution or file tools unless the operator says so."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError, config_from_mapping
from gateway.testing import RecordingAdapter, make_config
from gateway.toolsets import session_toolsets

REGISTERED = frozenset({"file", "execute_code", "memory", "clarify", "messaging", "delegation", "loud"})


def toolsets(platform: str | None, **sections) -> frozenset[str] | None:
    return session_toolsets(config_from_mapping(sections).config, REGISTERED, platform)


@pytest.mark.parametrize("platform", ["telegram", "slack", "discord", "webhook", "web"])
def test_chat_platforms_get_everything_but_code_and_files(platform):
    assert toolsets(platform) == REGISTERED - {"execute_code", "file"}


@pytest.mark.parametrize("platform", [None, "local"])
def test_the_operator_gets_everything(platform):
    assert toolsets(platform) is None
    assert toolsets(platform, agent={"enabled_toolsets": ["memory"]}) == {"memory"}


def test_agent_toolsets_turn_them_on_for_every_chat_platform():
    assert toolsets("slack", agent={"toolsets": ["execute_code"]}) == REGISTERED - {"file"}


def test_a_platforms_own_list_replaces_agent_toolsets():
    sections = {"agent": {"toolsets": ["execute_code"]}, "platforms": {"telegram": {"toolsets": ["file"]},
                                                                      "discord": {"toolsets": []}}}
    assert toolsets("telegram", **sections) == REGISTERED - {"execute_code"}
    assert toolsets("discord", **sections) == REGISTERED - {"execute_code", "file"}
    assert toolsets("slack", **sections) == REGISTERED - {"file"}


def test_the_web_chat_has_a_list_of_its_own_too():
    # The page behind a signing-in proxy is a team's own: it may get the file tools while chat platforms do not.
    assert toolsets("web", platforms={"web": {"toolsets": ["file"]}}) == REGISTERED - {"execute_code"}


def test_enabled_toolsets_still_restrict():
    assert toolsets("telegram", agent={"enabled_toolsets": ["memory", "execute_code"],
                                       "toolsets": ["execute_code"]}) == {"memory", "execute_code"}
    assert toolsets("telegram", agent={"enabled_toolsets": ["memory"], "toolsets": ["execute_code"]}) == {"memory"}


def test_only_the_gated_toolsets_can_be_named():
    with pytest.raises(ConfigError) as info:
        config_from_mapping({"agent": {"toolsets": ["shell"]}, "platforms": {"webhook": {"toolsets": ["memory"]}}})
    assert info.value.errors == [
        'agent.toolsets[0]: expected "execute_code" or "file", got "shell"',
        'platforms.webhook.toolsets[0]: expected "execute_code" or "file", got "memory"',
    ]


async def test_gateway_sessions_and_their_children_are_built_that_way(tmp_path, gateways):
    config = make_config(tmp_path, platforms={"webhook": {"toolsets": ["execute_code"]}})
    telegram, webhook, local = RecordingAdapter("telegram"), RecordingAdapter("webhook"), RecordingAdapter("local")
    gateway = await gateways(config, [telegram, webhook, local])
    chat = gateway.sessions.get("telegram", "c1", None).agent
    assert {"execute_code", "write_file", "read_file"}.isdisjoint(chat.tools)
    assert {"memory", "delegate_task"} <= set(chat.tools)
    assert "execute_code" not in chat.enabled_toolsets  # what its children inherit and may only narrow
    hook = gateway.sessions.get("webhook", "route:c", None).agent
    assert "execute_code" in hook.tools and "write_file" not in hook.tools
    terminal = gateway.sessions.get("local", "terminal", None).agent
    assert {"execute_code", "write_file", "read_file"} <= set(terminal.tools)
