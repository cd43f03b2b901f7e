"""A plugin's slash command answered on Slack with more parts than ``display.max_message_parts``: its parts go to
the command's user alone (``response_url``, ephemeral), so ``answer.md``, the whole answer, must not be shared in
the channel for everyone in it to read: a note, to that user alone, says the rest was not sent, and why. So does
the note that such an answer comes late, and an ``answer.md`` an older version journaled for one is refused, not
shared. Real slack-sdk against the loopback FakeSlack."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from gateway.testing import settled
from platforms.base import BadRequest, Outbound, OutboundFile
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_commands import inbound_of
from tests.platforms.slack_client import fake_slack, running_slack
from tests.plugin_modules import plugin_module
from tests.scenarios.test_slack_chat import slack_chat  # noqa: F401  (the fixture)

fake = fake_slack()
slack = running_slack()

PLUGIN = """\
async def dump(args, context):
    return "\\n\\n".join(f"secret line {n} " + "word " * 60 for n in range(40))

def register(ctx):
    ctx.register_command("dump", dump)
"""


async def test_a_long_ephemeral_command_answer_is_not_shared_in_the_channel_as_a_file(
        slack_chat, tmp_path, monkeypatch):  # noqa: F811
    plugin_module(tmp_path, monkeypatch, "dumping_slack_plugin", PLUGIN)
    chat = await slack_chat(plugins=["dumping_slack_plugin"], display={"max_message_parts": 2})
    await chat.fake.push_slash_command("/dump", "U1", "C1")
    await chat.fake.wait_for(lambda: len(chat.fake.ephemeral) >= 3)
    await settled(chat.gateway)
    assert all(e["response_type"] == "ephemeral" for e in chat.fake.ephemeral)
    shared = [m for m in chat.fake.messages.get(("C1", None), []) if m.get("files")]
    assert shared == [], "the whole of an answer for one user was shared in the channel"
    assert chat.fake.messages.get(("C1", None), []) == []
    texts = [e["text"] for e in chat.fake.ephemeral]
    assert len(texts) == 3 and texts[0].startswith("secret line 0")
    assert texts[2].startswith("The answer is too long for this chat (")
    assert "was not sent: this answer is for you alone" in texts[2]


def reply_token(fake: FakeSlack) -> str:
    token = inbound_of("slack", {"channel_id": "C1", "user_id": "U1", "command": "/status", "text": "",
                                 "trigger_id": "R1.1", "response_url": f"{fake.base_url}/response/R1"}).reply_token
    assert token is not None
    return token


async def test_the_note_that_a_command_answer_comes_late_goes_to_its_user_alone(
        fake: FakeSlack, slack: SlackAdapter, tmp_path: Path) -> None:
    # Journaled for all, the note went to the channel (chat.postMessage), telling everyone someone had asked.
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": slack}, clock=clock, late_after=600)
    try:
        outbox.enqueue("slack", "C1", None, "all well", kind="command", key="answer", reply_token=reply_token(fake))
        clock.advance(900)  # Slack was unreachable for a quarter of an hour
        await outbox.start()
        assert await outbox.flush(5)
    finally:
        await outbox.close()
        store.close()
    assert fake.messages.get(("C1", None), []) == []
    texts = [e["text"] for e in fake.ephemeral]
    assert len(texts) == 2 and texts[0].startswith("⏱ Delivered late") and texts[1] == "all well"


async def test_a_file_answering_a_slash_command_is_refused_not_shared_in_the_channel(
        fake: FakeSlack, slack: SlackAdapter, tmp_path: Path) -> None:
    path = tmp_path / "answer.md"
    path.write_text("secret line 0")
    message = Outbound(chat_id="C1", thread_id=None, text="The whole of it is in `answer.md`.", kind="command",
                       reply_token=reply_token(fake), idempotency_key="answer:file:0")
    with pytest.raises(BadRequest, match="shared with the whole channel"):
        await slack.send_file(message, OutboundFile(str(path), "answer.md", path.stat().st_size))
    assert fake.messages.get(("C1", None), []) == [] and fake.calls_to("files.getUploadURLExternal") == []
