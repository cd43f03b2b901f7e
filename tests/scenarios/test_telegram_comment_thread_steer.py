"""A comment steered into a turn asked in a discussion group's own chat moves none of that turn's answer under
the channel's post (`CommentThreads.handed` ties a turn to a comment thread only from the message that opens it)."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from tests.scenarios.test_telegram_comment_threads import BOB, BOT, GROUP, LONG, comment, fake, post

__all__ = ["fake"]


async def test_a_comment_steered_into_a_turn_of_the_groups_own_chat_leaves_its_answer_there(fake, telegram_gateways):
    model = ScriptedModel({"parent": [[{"wait": "go", "text": LONG}], [{"text": "about the post"}]]})
    gateway = await telegram_gateways(fake, model, progress="off", busy_input_mode="steer")
    posted = post(fake)
    asked = fake.message_update(GROUP, f"@{BOT} what is new in the group?", **BOB)
    fake.push_update(asked)
    await model.reached("go")
    comment(fake, f"@{BOT} and under this post?", on=posted)
    running = gateway.sessions.get("telegram", str(GROUP), None).running
    await fake.wait_for(lambda: running.steered, timeout=10)  # handed into the running turn
    model.release("go")
    await fake.wait_for(lambda: any("paragraph 5" in m["text"] for m in fake.messages[str(GROUP)]), timeout=10)
    await settled(gateway)
    answer = [m for m in fake.messages[str(GROUP)] if "paragraph" in m["text"]]
    # Not under the post: the first part quotes the question, in the reply chain it heads; the next quotes nothing.
    assert [m["thread_id"] for m in answer] == [asked["message"]["message_id"], None]
