"""`calls_in_text` on any JSON an answer may hold: it never raises (a "name" that is a list or an object raised
TypeError out of the model call), and takes as calls only objects naming an offered tool."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.models._text_tool_calls import calls_in_text

OFFERED = frozenset({"memory", "web_search"})

_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.sampled_from(sorted(OFFERED))
_values = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.sampled_from(["name", "arguments", "parameters", "x"]), inner, max_size=3),
                       max_leaves=12)


def _is_call(item) -> bool:
    return (isinstance(item, dict) and set(item) <= {"name", "arguments", "parameters"}
            and isinstance(item.get("name"), str) and item["name"] in OFFERED)


_FORMS = ["{}", "<tool_call>{}</tool_call>", "```json\n{}\n```", "<tools>{}</tools>"]


@settings(max_examples=300, deadline=None)
@given(value=_values, form=st.sampled_from(_FORMS))
def test_any_json_is_read_without_raising_and_only_offered_calls_are_taken(value, form):
    found = calls_in_text(form.replace("{}", json.dumps(value), 1), OFFERED)
    if found is not None:
        items = value if isinstance(value, list) else [value]
        assert items and all(_is_call(item) for item in items)
        assert [name for name, _ in found[1]] == [item["name"] for item in items]
