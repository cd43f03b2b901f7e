"""A question's choices as the chat reads them: each one item of its numbered list, whatever line breaks it
holds, numbered apart from a numbered list in the question itself, so that a number picks the choice shown
with it; a question or choice that shows nothing (zero-width characters) is refused unasked."""

from __future__ import annotations

import re

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.questions import OPTIONS, question_text
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.formatting.discord_markdown import render as discord
from platforms.formatting.slack_mrkdwn import render as slack
from platforms.formatting.telegram_html import render as telegram

ITEM = re.compile(r"^(\d+)\. (.*)$", re.MULTILINE)


def shown(rendered: str) -> list[tuple[int, str]]:
    """The numbered items a rendered message shows, with their numbers as the chat reads them."""
    return [(int(number), text) for number, text in ITEM.findall(rendered)]


@pytest.mark.parametrize("render", [telegram, discord, slack])
@pytest.mark.parametrize(("choices", "items"), [
    # Read as two items; a number after the first picked the choice below the one it showed beside.
    (["keep it\nas is", "rewrite it"], ["keep it as is", "rewrite it"]),
    (["keep it\n2. as is", "rewrite it"], ["keep it 2. as is", "rewrite it"]),
    (["keep it\n\nas is", "rewrite it"], ["keep it as is", "rewrite it"]),  # a blank line ended the list
    (["keep it\r\nas is\u2028now", "rewrite it"], ["keep it as is now", "rewrite it"]),
])
def test_a_choice_with_line_breaks_is_one_item_on_one_line(render, choices, items):
    assert shown(render(question_text("Which?", choices, 600))) == list(enumerate(items, 1))


@pytest.mark.parametrize("render", [telegram, discord, slack])
@pytest.mark.parametrize("question", [
    "Which step failed?\n1. build\n2. test",
    "Which step failed?\n\n1) build\n2) test",
    "Steps:\n1. build\n2. test\n\nWhich one failed?",
])
def test_choices_under_a_numbered_list_of_the_question_are_numbered_apart_from_it(render, question):
    # Right after the question's list, Markdown read one list: the renderers showed the choices as 3 and 4, and
    # "1" picked "retry" where the chat showed "build".
    rendered = render(question_text(question, ["retry", "skip"], 600))
    assert shown(rendered) == [(1, "build"), (2, "test"), (1, "retry"), (2, "skip")]
    assert rendered.index(OPTIONS) < rendered.index("retry") < rendered.index("skip")
    assert rendered.index("test") < rendered.index(OPTIONS)


def test_a_question_without_a_numbered_list_shows_its_choices_as_before():
    assert question_text("Which environment?", ["staging", "production"], 600) == (
        "❓ Which environment?\n\n1. staging\n2. production\n\n"
        "Answer with your next message (a number picks an option); I wait 10 min.")


def asking(question: str, choices: list[str]):
    def parent(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "tool":
            return {"text": f"got: {last['content']}"}
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": question, "choices": choices}}]}
    return parent


async def test_a_number_picks_the_choice_shown_with_it_and_the_model_reads_it_as_it_wrote_it(tmp_path, gateways):
    choices = ["keep it\nas is", "rewrite it"]
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat],
                             model=ScriptedModel({"parent": asking("Which step failed?\n1. build\n2. test", choices)}))
    await chat.say("fix it")
    await chat.wait_for(lambda: chat.texts())
    assert chat.texts() == [question_text("Which step failed?\n1. build\n2. test", choices, 600)]
    await chat.say("1")
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    assert chat.texts()[1] == "got: keep it\nas is"


@pytest.mark.parametrize(("question", "choices", "why"), [
    ("\u200b", [], "the question is only whitespace or invisible characters; nothing was asked"),
    (" \u200b\u200e\ufeff ", ["a"], "the question is only whitespace or invisible characters; nothing was asked"),
    ("Which?", ["staging", "\u200b"], "choice 2 is only whitespace or invisible characters; nothing was asked"),
    ("Which?", ["\u200c\u200d\n"], "choice 1 is only whitespace or invisible characters; nothing was asked"),
])
async def test_a_question_or_choice_showing_nothing_is_refused_unasked(tmp_path, gateways, question, choices, why):
    # The tool's own check reads only whitespace as blank: the chat got a bare "❓", or a number beside nothing.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat],
                             model=ScriptedModel({"parent": asking(question, choices)}))
    await chat.say("fix it")
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    [answer] = chat.texts()
    assert answer.startswith("got: Error:") and why in answer, answer
    assert not any(message.outbound.text.startswith("❓") for message in chat.messages)
