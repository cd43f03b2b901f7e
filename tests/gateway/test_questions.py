"""The model asks the chat (the clarify tool): the next message answers, whatever the busy
mode; no answer in time is said in the chat; a stop or a restart leaves nothing waiting."""

from __future__ import annotations

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.questions import FILE_WAITS, NOT_NOW, PAUSE_GRACE, UNANSWERABLE, chosen, expired_text, question_text
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Attachment
from platforms.fakes._waiting import wait_until
from tests.asking_model import CHOICES, asking_parent

QUESTION = question_text("Which environment?", CHOICES, 600)


async def test_the_next_message_answers_the_question_and_a_number_picks_a_choice(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    accepted = await chat.say("2")  # busy_input_mode interrupt: an answer interrupts nothing
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    assert chat.texts() == [QUESTION, "deploying to: production"]
    assert accepted.turn_id == chat.messages[0].outbound.turn_id
    assert gateway.store.inbox.unfinished() == []


async def test_a_question_nobody_answers_in_time_says_so_and_the_turn_goes_on(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path, agent={"clarify_timeout_seconds": 60}), [chat],
                             model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: len(chat.texts()) == 1)
    await clock.until_sleeping(lasting=60)
    clock.advance(60)
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert chat.texts()[1:] == [expired_text(60), "deploying to: (no answer within 1 min; proceed with your best "
                                                  "judgement)"]
    await chat.say("hello")  # a message after that is a message again
    await chat.wait_for(lambda: len(chat.texts()) == 4)
    assert chat.texts()[3] == "plain answer to hello"


async def test_in_a_group_the_note_that_a_question_was_given_up_on_quotes_the_askers_message(tmp_path, gateways):
    # Several members' turns ask and go on one after another there: the note says whose request
    # goes on without an answer, as the question did.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path, agent={"clarify_timeout_seconds": 60}), [chat],
                             model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat.say("please deploy the app", private=False, message_id="m-7")
    await chat.wait_for(lambda: len(chat.texts()) == 1)
    await clock.until_sleeping(lasting=60)
    clock.advance(60)
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert chat.texts()[1] == expired_text(60)
    assert [m.outbound.reply_to for m in chat.messages] == ["m-7", "m-7", None]


async def paused_while_asking(tmp_path, gateways) -> tuple[RecordingAdapter, FakeClock]:
    """A question with a 60 s timeout asked, then the process paused for 300 s (SIGSTOP, docker
    pause: monotonic time goes on while nothing runs)."""
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    await gateways(make_config(tmp_path, agent={"clarify_timeout_seconds": 60}), [chat],
                   model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: len(chat.texts()) == 1)
    await clock.until_sleeping(lasting=60)
    clock.advance(300)
    return chat, clock


async def test_after_a_pause_of_the_process_the_answer_sent_meanwhile_is_still_taken(tmp_path, gateways):
    chat, clock = await paused_while_asking(tmp_path, gateways)
    # As the process continues, what fell due runs before the platform's next poll hands over the
    # answer the user sent during the pause: the question gave up, or waits a grace.
    await wait_until(lambda: expired_text(60) in chat.texts() or PAUSE_GRACE in clock.sleeps, 5.0)
    await chat.say("2")
    await chat.wait_for(lambda: "deploying to: production" in chat.texts())
    assert expired_text(60) not in chat.texts()


async def test_after_a_pause_a_question_nobody_answered_expires_after_a_short_grace(tmp_path, gateways):
    chat, clock = await paused_while_asking(tmp_path, gateways)
    await clock.until_sleeping(lasting=PAUSE_GRACE)
    assert expired_text(60) not in chat.texts()
    clock.advance(PAUSE_GRACE)
    await chat.wait_for(lambda: expired_text(60) in chat.texts())


async def test_stop_while_waiting_for_an_answer_leaves_no_question_open(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await chat.say("staging")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    await settled(gateway)
    assert chat.texts() == [QUESTION, "Stopped the running turn.", "plain answer to staging"]


async def test_a_restart_while_waiting_asks_again_and_the_answer_is_not_replayed_as_a_message(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await gateway.stop(grace=0)  # the turn runs again after the restart

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": asking_parent}))
    await chat2.wait_for(lambda: chat2.texts() == [QUESTION])  # asked again, in a message of its own
    await chat2.say("staging")
    await chat2.wait_for(lambda: len(chat2.texts()) == 2)
    await settled(gateway2)
    assert chat2.texts() == [QUESTION, "deploying to: staging"]
    assert gateway2.store.inbox.unfinished() == []


def test_a_number_outside_the_choices_and_free_text_are_the_answer_as_written():
    assert chosen(" 3 ", CHOICES) == "3" and chosen("prod, please", CHOICES) == "prod, please"
    assert chosen("1", None) == "1" and chosen("1", CHOICES) == "staging"
    assert QUESTION == ("❓ Which environment?\n\n1. staging\n2. production\n\n"
                        "Answer with your next message (a number picks an option); I wait 10 min.")


@pytest.mark.parametrize("busy_mode", ["queue", "steer"])
async def test_a_message_with_a_file_is_not_taken_for_the_answer_and_the_chat_is_told(tmp_path, gateways, busy_mode):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": busy_mode}), [chat],
                             model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    # Queued behind the asking turn, not taken for its answer: said at once, not after the wait.
    await chat.say("staging", attachments=[Attachment("voice", "voice.ogg", "audio/ogg", None, "v1")])
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    assert chat.texts()[1] == FILE_WAITS and chat.kinds()[1] == "command"
    assert gateway.sessions.find("chat", "c1", None).running.question is not None
    await chat.say("1")
    await chat.wait_for(lambda: "deploying to: staging" in chat.texts())
    await settled(gateway)
    assert chat.texts()[:3] == [QUESTION, FILE_WAITS, "deploying to: staging"]
    assert len(chat.texts()) > 3  # the message with the voice note had a turn of its own afterwards


async def test_a_notice_while_the_question_waits_says_it_waits_for_the_answer(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    await gateways(make_config(tmp_path, agent={"gateway_notify_interval": 30}, display={"progress": "off"}),
                   [chat], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await clock.until_sleeping(lasting=30)
    clock.advance(30)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    assert chat.texts("notice") == ["⏳ Working — 30 s — waiting for your answer"]
    await chat.say("1")
    await chat.wait_for(lambda: "deploying to: staging" in chat.texts())


async def test_a_card_while_the_question_waits_says_it_waits_for_the_answer(tmp_path, gateways):
    # Its headline is the long-running notice where a card is shown: not a tool's name to the user.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path, agent={"gateway_notify_interval": 30},
                                         display={"progress": "card", "progress_delay": 3}),
                             [chat], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    assert chat.texts("notice") == ["⏳ Waiting for your answer — 3 s\n▸ clarify"]
    await chat.say("1")
    await chat.wait_for(lambda: "deploying to: staging" in chat.texts())
    await settled(gateway)
    assert chat.messages[1].text == "✓ Done in 3 s"


def results_asking_parent(request: ModelRequest) -> dict:
    """Delegates in the background, then asks about the results in the turn that delivers them."""
    last = request.messages[-1]
    if last["role"] == "user" and "Background delegation results" in str(last["content"]):
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                  "choices": CHOICES}}]}
    if last["role"] == "tool" and last["content"].removeprefix("[@alice] ") in CHOICES:  # in a group: who answered
        return {"text": f"deploying to: {last['content']}"}
    if last["role"] == "tool":
        return {"text": "on it"}
    return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "build it"}}]}


async def test_a_question_in_a_group_asks_for_a_reply_also_in_the_turn_delivering_background_results(
        tmp_path, gateways):
    # A group hears only what is addressed to the bot (Telegram, a Discord channel): a reply always is.
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": results_asking_parent, "leaf": [[{"text": "built"}]]})
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "background"}), [chat], model=model)
    await chat.say("please build and deploy", private=False)
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    assert chat.texts() == ["on it", question_text("Which environment?", CHOICES, 600, private=False)]
    assert chat.texts()[1].endswith("\n\nReply to this message to answer (a number picks an option); I wait 10 min.")
    await chat.say("2", private=False)
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert chat.texts()[2] == "deploying to: [@alice] production"


def test_an_option_number_written_as_people_write_it_picks_that_option():
    for answer in ("2", " 2 ", "2.", "2)", "(2)", "#2", "２", "２．"):
        assert chosen(answer, CHOICES) == "production", answer
    # Not an option's number: passed on as written (a superscript two is not a digit to count with,
    # and a number past Python's 4300 digits no number to read).
    for answer in ("²", "2.5", "#7", "12", "0", "1" * 5000):
        assert chosen(answer, CHOICES) == answer, answer


def test_an_option_number_beside_a_mention_picks_that_option():
    # As a Telegram group's message reaches the bot: with its mention, which the adapter leaves in the text.
    for answer in ("@bot 2", "@Bot 2", "2 @bot", "@bot, 2", "@bot: (2)", " @bot  #2. "):
        assert chosen(answer, CHOICES) == "production", answer
    # A mention is whole (``@bot2`` is someone's name), one on each side at most, and no number of an option
    # beside it is passed on as written too.
    for answer in ("@bot2", "@bot 7", "@a @b 2", "2 @bot 1", "2@bot", "bot 2", "@ 2"):
        assert chosen(answer, CHOICES) == answer, answer


def replaying_parent(gate: str):
    """`asking_parent`, whose question waits at ``gate`` before it is asked."""
    def parent(request: ModelRequest) -> dict:
        step = asking_parent(request)
        return {**step, "wait": gate} if "tool_calls" in step else step
    return parent


async def test_an_answer_to_a_question_asked_before_a_restart_answers_it_when_the_turn_asks_it_again(
        tmp_path, gateways):
    # The user answers what they saw; the turn run again after the restart has not asked yet. Taken
    # for a message of its own, it stopped that turn and reached the model without the question.
    chat, config = RecordingAdapter(), make_config(tmp_path)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await gateway.stop(grace=0)  # the turn runs again after the restart

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": replaying_parent("asking")})
    gateway2 = await gateways(config, [chat2], model=model)
    await model.reached("asking")
    await chat2.say("2")
    model.release("asking")
    await chat2.wait_for(lambda: chat2.texts())
    await settled(gateway2)
    assert chat2.texts() == ["deploying to: production"]  # the same question: not asked twice
    assert gateway2.store.inbox.unfinished() == []


async def test_an_answer_held_for_a_question_the_turn_run_again_asks_otherwise_is_a_message_of_its_own(
        tmp_path, gateways):
    chat, config = RecordingAdapter(), make_config(tmp_path, display={"busy_input_mode": "steer"})
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await gateway.stop(grace=0)

    def other_question(request: ModelRequest) -> dict:  # the model asks otherwise this time
        step = replaying_parent("asking")(request)
        if "tool_calls" in step:
            return {**step, "tool_calls": [{"name": "clarify", "arguments": {"question": "Which region?"}}]}
        return step

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": other_question})
    gateway2 = await gateways(config, [chat2], model=model)
    await model.reached("asking")
    await chat2.say("2")  # meant for "Which environment?": never taken for the region
    model.release("asking")
    await chat2.wait_for(lambda: len(chat2.texts()) == 1)
    assert chat2.texts() == [question_text("Which region?", None, 600)]
    await chat2.say("eu-west")
    await chat2.wait_for(lambda: len(chat2.texts()) == 3)
    await settled(gateway2)
    assert chat2.texts()[1:] == ["deploying to: eu-west", "plain answer to 2"]
    assert gateway2.store.inbox.unfinished() == []


async def test_a_question_answered_before_a_restart_holds_no_later_message_for_its_answer(tmp_path, gateways):
    chat, config = RecordingAdapter(), make_config(tmp_path, display={"busy_input_mode": "queue"})

    def answered_then_working(request: ModelRequest) -> dict:
        step = asking_parent(request)
        return {**step, "wait": "working"} if request.messages[-1]["role"] == "tool" else step

    model = ScriptedModel({"parent": answered_then_working})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await chat.say("1")
    await model.reached("working")
    await gateway.stop(grace=0)  # the turn runs again after the restart, and asks again

    chat2, model2 = RecordingAdapter(), ScriptedModel({"parent": replaying_parent("asking")})
    gateway2 = await gateways(config, [chat2], model=model2)
    await model2.reached("asking")
    await chat2.say("how is it going?")  # no answer to the question the user answered already
    model2.release("asking")
    await chat2.wait_for(lambda: chat2.texts() == [QUESTION])
    await chat2.say("2")
    await chat2.wait_for(lambda: len(chat2.texts()) == 3)
    await settled(gateway2)
    assert chat2.texts()[1:] == ["deploying to: production", "plain answer to how is it going?"]


async def test_messages_sent_while_an_ordinary_turn_runs_read_no_earlier_run_of_it(tmp_path, gateways):
    # Only a turn run again after a restart may have asked before: reading the turn's outbox rows
    # for each message sent while any turn runs cost a query per message for nothing.
    chat, model = RecordingAdapter(), ScriptedModel({"parent": replaying_parent("asking")})
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat], model=model)
    await chat.say("please deploy the app")
    await model.reached("asking")
    statements: list[str] = []
    gateway.store.db._conn.set_trace_callback(statements.append)
    try:
        await chat.say("how is it going?")
        await chat.say("and now?")
        model.release("asking")
        await chat.wait_for(lambda: chat.texts() == [QUESTION])
        await chat.say("2")
        await chat.wait_for(lambda: len(chat.texts()) == 4)
    finally:
        gateway.store.db._conn.set_trace_callback(None)
    await settled(gateway)
    assert chat.texts() == [QUESTION, "deploying to: production", "plain answer to how is it going?",
                            "plain answer to and now?"]
    assert not [s for s in statements if "FROM gateway_outbox WHERE platform=" in s and "turn_id=" in s]


async def test_a_question_asked_once_nobody_can_answer_is_shown_and_not_waited_for(tmp_path, gateways):
    # A terminal chat's piped input ended before the model asked: the transcript still says what
    # the model went on without, and says that no answer is waited for.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}))
    gateway.questions.input_ended(chat.name)
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    assert chat.texts() == [question_text("Which environment?", CHOICES, 600, answerable=False),
                            f"deploying to: Error: {NOT_NOW}"]


async def test_a_message_sent_before_the_question_was_asked_is_not_its_answer(tmp_path, gateways):
    # Both sent while the gateway was down, handed over back to back after the start (a platform's
    # catch-up): the second was written before the question existed, so it cannot be meant for it.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}),
                             clock=clock)  # busy_input_mode: interrupt
    await chat.say("please deploy the app", sent_at=clock.time() - 60)
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await chat.say("and check the logs", sent_at=clock.time() - 59)
    assert gateway.sessions.find("chat", "c1", None).running.question is not None  # still waits
    await chat.say("2")
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert chat.texts() == [QUESTION, "deploying to: production", "plain answer to and check the logs"]
    assert gateway.store.inbox.unfinished() == []


async def test_a_message_the_platform_dates_to_the_whole_second_before_the_question_still_answers_it(
        tmp_path, gateways):
    # Telegram dates a message in whole seconds: an answer written just after the question may carry a
    # date just before it.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False, start=1_700_000_000.6)
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}),
                             clock=clock)
    await chat.say("please deploy the app", sent_at=1_700_000_000.0)
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    clock.advance(0.2)
    await chat.say("2", sent_at=1_700_000_000.0)
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    assert chat.texts() == [QUESTION, "deploying to: production"]


async def asked_before_a_restart(tmp_path, gateways, clock: FakeClock) -> tuple[dict, float]:
    """A question asked, then the gateway stopped for a minute (its turn runs again after the start).
    Returns the config and when the question was asked."""
    chat, config = RecordingAdapter(), make_config(tmp_path)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat.say("please deploy the app", sent_at=clock.time() - 30)
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    asked = clock.time()
    await gateway.stop(grace=0)
    clock.advance(60)
    return config, asked


async def test_a_turn_run_again_takes_for_its_answer_what_was_sent_after_the_earlier_run_asked(tmp_path, gateways):
    # Asked again after the restart, the question has been in the chat since the earlier run asked it:
    # what was sent before that is a message of its own, what was sent after it (while the gateway was
    # down) its answer.
    clock = FakeClock(autojump=False)
    config, asked = await asked_before_a_restart(tmp_path, gateways, clock)
    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat2.wait_for(lambda: chat2.texts() == [QUESTION])  # asked again
    await chat2.say("and check the logs", sent_at=asked - 29)
    assert gateway2.sessions.find("chat", "c1", None).running.question is not None  # still waits
    await chat2.say("2", sent_at=asked + 10)
    await chat2.wait_for(lambda: len(chat2.texts()) == 3)
    await settled(gateway2)
    assert chat2.texts() == [QUESTION, "deploying to: production", "plain answer to and check the logs"]
    assert gateway2.store.inbox.unfinished() == []


async def test_a_message_sent_before_the_earlier_run_asked_is_not_held_for_the_question_asked_again(
        tmp_path, gateways):
    clock = FakeClock(autojump=False)
    config, asked = await asked_before_a_restart(tmp_path, gateways, clock)
    chat2, model = RecordingAdapter(), ScriptedModel({"parent": replaying_parent("asking")})
    gateway2 = await gateways(config, [chat2], model=model, clock=clock)
    await model.reached("asking")
    await chat2.say("and check the logs", sent_at=asked - 29)  # not held: the question was not in the chat
    model.release("asking")
    await chat2.wait_for(lambda: chat2.texts() == [QUESTION])
    await chat2.say("2")
    await chat2.wait_for(lambda: len(chat2.texts()) == 3)
    await settled(gateway2)
    assert chat2.texts() == [QUESTION, "deploying to: production", "plain answer to and check the logs"]
    assert gateway2.store.inbox.unfinished() == []


async def test_a_message_sent_after_the_earlier_run_asked_is_held_for_the_question_asked_again(tmp_path, gateways):
    clock = FakeClock(autojump=False)
    config, asked = await asked_before_a_restart(tmp_path, gateways, clock)
    chat2, model = RecordingAdapter(), ScriptedModel({"parent": replaying_parent("asking")})
    gateway2 = await gateways(config, [chat2], model=model, clock=clock)
    await model.reached("asking")
    await chat2.say("2", sent_at=asked + 10)  # sent while the gateway was down
    model.release("asking")
    await chat2.wait_for(lambda: chat2.texts())
    await settled(gateway2)
    assert chat2.texts() == ["deploying to: production"]  # the same question: not asked twice
    assert gateway2.store.inbox.unfinished() == []


async def test_a_question_asked_again_after_two_restarts_has_been_in_the_chat_since_the_first_run_asked(
        tmp_path, gateways):
    clock = FakeClock(autojump=False)
    config, asked = await asked_before_a_restart(tmp_path, gateways, clock)
    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat2.wait_for(lambda: chat2.texts() == [QUESTION])  # asked again, and stopped again
    await gateway2.stop(grace=0)
    clock.advance(60)

    chat3 = RecordingAdapter()
    gateway3 = await gateways(config, [chat3], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await chat3.wait_for(lambda: chat3.texts() == [QUESTION])
    await chat3.say("2", sent_at=asked + 10)  # sent during the first stop, handed over only now
    await chat3.wait_for(lambda: len(chat3.texts()) == 2)
    await settled(gateway3)
    assert chat3.texts() == [QUESTION, "deploying to: production"]


async def test_a_question_waiting_when_nobody_can_answer_any_more_says_so_under_it(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    gateway.questions.input_ended(chat.name)  # the terminal chat's piped input ran out
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert chat.texts() == [QUESTION, UNANSWERABLE, f"deploying to: Error: {NOT_NOW}"]


LONG_CHOICES = [f"{name}: " + "the whole stack, with every service it runs " * 3 for name in CHOICES]


def long_asking_parent(request: ModelRequest) -> dict:
    """`asking_parent`, whose choices are too long for one message of a 300-character platform."""
    last = request.messages[-1]
    if last["role"] == "tool":
        return {"text": f"deploying to: {last['content'].partition(':')[0]}"}
    return {"wait": "asking", "tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                                "choices": LONG_CHOICES}}]}


@pytest.mark.parametrize("handed_over", ["before it is asked again", "after it is asked again"])
async def test_a_question_in_parts_asked_again_after_a_restart_takes_the_answer_sent_meanwhile(tmp_path, gateways,
                                                                                             handed_over):
    # Its parts are the question the chat has: taken for another, it was asked twice, waited out its
    # timeout for the answer the user had given, and that answer then ran as a message of its own.
    clock, config = FakeClock(autojump=False), make_config(tmp_path)
    chat, model = RecordingAdapter(text_limit=300), ScriptedModel({"parent": long_asking_parent})
    model.release("asking")
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please deploy the app", sent_at=clock.time() - 30)
    await chat.wait_for(lambda: chat.texts() and chat.texts()[-1].endswith("I wait 10 min."))
    asked, parts = clock.time(), chat.texts()
    assert len(parts) > 1
    await gateway.stop(grace=0)  # the turn runs again after the restart, and asks again
    clock.advance(60)

    chat2, model = RecordingAdapter(text_limit=300), ScriptedModel({"parent": long_asking_parent})
    gateway2 = await gateways(config, [chat2], model=model, clock=clock)
    if handed_over == "before it is asked again":
        await model.reached("asking")
        await chat2.say("2", sent_at=asked + 10)  # sent while the gateway was down
        model.release("asking")
    else:
        model.release("asking")
        await chat2.wait_for(lambda: chat2.texts() == parts)  # asked again, in messages of its own
        await chat2.say("2", sent_at=asked + 10)  # sent while the gateway was down, handed over only now
    await chat2.wait_for(lambda: "deploying to: production" in chat2.texts())
    await settled(gateway2)
    assert chat2.texts() == [*([] if handed_over == "before it is asked again" else parts), "deploying to: production"]
    assert gateway2.store.inbox.unfinished() == []
