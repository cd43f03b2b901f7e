"""``/delegation <backend> --now`` as a phone sends it: smart punctuation makes ``--`` a dash."""

from __future__ import annotations

import pytest

from gateway.testing import RecordingAdapter
from tests.gateway.test_delegation_command import command, config, offers_routes, turn
from tests.gateway.wire import parent_requests


@pytest.mark.parametrize("flag", ["\u2014now", "\u2013now", "--NOW"])
async def test_a_dashed_now_switches_from_the_next_turn(tmp_path, llm, gateways, flag):
    server = await llm()
    server.respond_with(lambda body: {"text": "ok"})
    chat = RecordingAdapter()
    await gateways(config(tmp_path, server), [chat])
    await turn(chat)
    answer = await command(chat, f"/delegation model_map {flag}")
    assert answer.startswith("Delegation switched to model_map: subagents started from your next message use it.")
    await turn(chat)
    assert offers_routes(parent_requests(server)[-1])


async def test_a_dashed_now_alone_asks_for_the_backend(tmp_path, llm, gateways):
    server = await llm()
    chat = RecordingAdapter()
    await gateways(config(tmp_path, server), [chat])
    assert await command(chat, "/delegation \u2014now") == "Say which backend: /delegation <backend> --now."
