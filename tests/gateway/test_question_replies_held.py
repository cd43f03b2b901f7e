"""A group message sent across a restart, while the turn run again has not asked its question again: held for that
question only if it may answer it (`gateway.questions.Questions.hold`). One replying to another message than the
question (`Inbound.reply_to`) is a request of its own, not held for the question, nor taken for its answer."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Inbound
from tests.asking_model import asking_parent
from tests.gateway.test_questions import replaying_parent


def said(chat: RecordingAdapter, user: str, text: str, reply_to: str | None) -> Inbound:
    return Inbound(chat.name, "group", None, user, user, text, f"ev-{user}-{text}", is_private=False,
                   message_id=f"m-{user}", reply_to=reply_to)


async def test_a_reply_to_another_message_is_not_held_for_the_question_asked_again(tmp_path, gateways):
    chat, config = RecordingAdapter(), make_config(tmp_path)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app", chat="group", user="bob", name="bob", private=False, message_id="m-1")
    await chat.wait_for(lambda: chat.texts())
    question = chat.messages[0].message_id
    await gateway.stop(grace=0)  # the turn runs again after the restart, and asks again

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": replaying_parent("asking")})
    gateway2 = await gateways(config, [chat2], model=model)
    await model.reached("asking")
    await chat2._sink(said(chat2, "carol", "and the one after?", reply_to="m-0"))  # an earlier message
    await chat2._sink(said(chat2, "bob", "2", reply_to=question))
    model.release("asking")
    await chat2.wait_for(lambda: len(chat2.texts()) == 2)
    await settled(gateway2)
    assert chat2.texts() == ["deploying to: [@bob] production", "plain answer to [@carol] and the one after?"]
    assert gateway2.store.inbox.unfinished() == []
