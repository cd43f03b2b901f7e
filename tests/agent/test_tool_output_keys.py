"""A tool's answer that is not text goes to the model as JSON, what JSON cannot hold as its `str`: dict keys
too (a day's date, a tuple). Such a key failed the call after the tool had run, and the model, told it had
failed, ran it again."""

import datetime

from agent import AgentSession, ToolRegistry
from agent.models.scripted import ScriptedModel


async def test_keys_json_cannot_hold_are_sent_as_text_and_the_call_counts_as_done():
    answer = {"by_day": {datetime.date(2024, 5, 1): 3, datetime.date(2024, 5, 2): 5},
              "pairs": [{("eu", "prod"): True}], 7: None}
    tools = ToolRegistry()
    tools.add("stats", "stats", {"type": "object"}, lambda args, ctx: answer, toolset="data")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "stats"}]}, {"text": "3 and 5"}]]})
    s = AgentSession(model=model, tools=tools.resolve())
    result = await s.run_turn("how many?")
    assert (result.exit_reason, [e.ok for e in result.tool_trace]) == ("completed", [True])
    (output,) = [m["content"] for m in s.messages if m["role"] == "tool"]
    assert output == ('{"by_day": {"2024-05-01": 3, "2024-05-02": 5}, "pairs": [{"(\'eu\', \'prod\')": true}], '
                      '"7": null}')
