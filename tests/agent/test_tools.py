"""`Tool.invoke`: what the model is told of arguments its schema refuses."""

from pathlib import Path

import pytest

from agent._errors import ToolError
from agent._tools import ToolContext, ToolRegistry

SCHEMA = {"type": "object", "properties": {"content": {"type": "string"}}, "additionalProperties": False}


async def _invoke(args):
    tool = ToolRegistry().add("save", "Save text.", SCHEMA, lambda a, c: "saved", toolset="test")
    return await tool.invoke(args, ToolContext(session=None, call_id="c1", workspace=Path(".")))


async def test_a_refused_value_is_quoted_shortened_not_whole():
    # jsonschema quotes the value whole: a file's 100,000 characters sent as a list came back as long
    # again, and stayed in every later request of the conversation.
    with pytest.raises(ToolError) as refused:
        await _invoke({"content": ["x" * 100_000]})
    message = str(refused.value)
    assert message.startswith("invalid arguments for save (content): ['xxx")
    assert message.endswith("xxx'] is not of type 'string'")
    assert "[…99628 characters…]" in message and len(message) < 500


async def test_a_short_refusal_is_as_jsonschema_says_it():
    with pytest.raises(ToolError, match=r"^invalid arguments for save \(content\): 5 is not of type 'string'$"):
        await _invoke({"content": 5})
    with pytest.raises(ToolError, match=r"^invalid arguments for save \(arguments\): Additional properties are not "
                                        r"allowed \('extra' was unexpected\)$"):
        await _invoke({"extra": 1})
