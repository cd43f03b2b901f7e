"""A chat's notes are the chat's, not its session's: `/new` empties the conversation, never the notes, and a
restart keeps both (docs/agent.md, "Memory: whose notes")."""

from __future__ import annotations

from gateway.testing import RecordingAdapter, make_config
from tests.gateway.test_memory_scope import remembering


async def test_a_note_outlives_new_and_a_restart(tmp_path, gateways):
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": remembering})
    await chat.say("remember the boat is called Ada")
    await chat.wait_for(lambda: chat.texts("reply") == ["memory: added note 1"])
    await chat.say("/new")
    await chat.wait_for(lambda: any(text.startswith("Started a new session") for text in chat.texts()))
    await gateway.stop(grace=0)

    again = RecordingAdapter()
    await gateways(config, [again], script={"parent": remembering})
    await again.say("recall")
    await again.wait_for(lambda: again.texts("reply") == ["memory: [1] the boat is called Ada"])
