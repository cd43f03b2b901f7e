"""Which completion replies count as the model's silence (`NO_REPLY`): the token alone, however a model dresses it."""

import pytest

from agent import TurnResult, Usage
from gateway.replies import is_silence, reply_text


@pytest.mark.parametrize("text", ["NO_REPLY", " NO_REPLY\n", "NO_REPLY.", "`NO_REPLY`", "**NO_REPLY**.",
                                  "no_reply", "[SILENT]", '"NO_REPLY"'])
def test_the_token_alone_is_silence(text):
    assert is_silence(text)


@pytest.mark.parametrize("text", ["NO_REPLY, nothing new", "No reply.", "The answer is NO_REPLY", "SILENT",
                                  "NO_REPLY\nexcept that the build broke", ""])
def test_anything_more_is_a_message(text):
    assert not is_silence(text)


def test_only_a_completion_may_be_silenced():
    said = TurnResult("t-1", "`NO_REPLY`.", "completed", 1, Usage(), None, 0.1, ())
    assert reply_text("completion", said) is None
    assert reply_text("reply", said) == "`NO_REPLY`."  # a user's message always gets its answer
