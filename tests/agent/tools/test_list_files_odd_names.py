"""list_files shows a name holding a newline (or any control character, or a line separator) as a JSON
string, so that it cannot read as two entries, nor as the listing's own note; the model names it back
as shown. A name that begins with a quote is shown so too, so a quoted entry is never ambiguous."""

from __future__ import annotations

import json
from pathlib import Path

from agent.tools.file import file_toolset

READ, LIST, _ = file_toolset()


async def test_a_name_with_a_newline_is_one_entry_the_model_can_name_back(call, workspace: Path):
    (workspace / "a\nb.txt").write_text("one file")
    (workspace / "x\n[listing truncated: first 1000 entries shown; narrow the path or pattern]").write_text("")
    (workspace / "plain.txt").write_text("")
    listed = (await call(LIST, {})).split("\n")
    # In the order of the names themselves.
    assert listed == ['"a\\nb.txt"', "plain.txt",
                      '"x\\n[listing truncated: first 1000 entries shown; narrow the path or pattern]"']
    assert await call(READ, {"path": json.loads(listed[0])}) == "one file"


async def test_other_unseen_characters_are_escaped_and_the_rest_of_the_name_is_kept(call, workspace: Path):
    (workspace / "d\u2028ir").mkdir()
    (workspace / "d\u2028ir" / "r\u00e9sum\u00e9\t.md").write_text("")
    assert await call(LIST, {"pattern": "**"}) == '"d\\u2028ir"/\n"d\\u2028ir/r\u00e9sum\u00e9\\t.md"'


async def test_a_name_that_begins_with_a_quote_is_quoted_too(call, workspace: Path):
    (workspace / '"a\\nb.txt"').write_text("quotes and a backslash")
    (workspace / 'say "hi".txt').write_text("")
    listed = (await call(LIST, {})).split("\n")
    assert listed == ['"\\"a\\\\nb.txt\\""', 'say "hi".txt']
    assert await call(READ, {"path": json.loads(listed[0])}) == "quotes and a backslash"


async def test_controls_json_writes_as_they_are_are_escaped_too(call, workspace: Path):
    name = "del\x7f c1\x85 nel"
    (workspace / name).write_text("")
    [listed] = (await call(LIST, {})).split("\n")
    assert listed == '"del\\u007f c1\\u0085 nel"' and json.loads(listed) == name
