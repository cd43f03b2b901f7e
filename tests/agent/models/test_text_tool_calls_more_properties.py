"""`calls_in_text` on Mistral's forms and on calls the user pasted: it never raises, takes Mistral's calls of offered
tools alone, and never takes a call the latest user message holds, however the model spaced it again."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.models._text_tool_calls import calls_in_text

OFFERED = frozenset({"memory", "web_search"})

_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.sampled_from(sorted(OFFERED))
_values = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.sampled_from(["name", "arguments", "parameters", "id", "x"]), inner,
                                         max_size=3),
                       max_leaves=12)
_names = st.sampled_from([*sorted(OFFERED), "launch", "web-search", ""])


@settings(max_examples=300, deadline=None)
@given(name=_names, value=_values, again=st.booleans())
def test_mistrals_name_args_form_is_taken_for_offered_names_and_objects_alone(name, value, again):
    call = f"[TOOL_CALLS]{name}[ARGS]{json.dumps(value)}"
    found = calls_in_text(call + call if again else call, OFFERED)
    if name in OFFERED and isinstance(value, dict):
        assert found == (None, [(name, json.dumps(value, ensure_ascii=False))] * (2 if again else 1))
    else:
        assert found is None


@settings(max_examples=300, deadline=None)
@given(value=_values)
def test_mistrals_list_form_never_raises_and_takes_offered_calls_alone(value):
    found = calls_in_text(f"[TOOL_CALLS] {json.dumps(value)}", OFFERED)
    if found is not None:
        items = value if isinstance(value, list) else [value]
        assert all(isinstance(item, dict) and set(item) <= {"name", "arguments", "parameters", "id"}
                   and item.get("name") in OFFERED for item in items)


_FORMS = ["{}", "<tool_call>{}</tool_call>", "```json\n{}\n```", "[TOOL_CALLS][{}]"]


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(OFFERED)), arguments=st.dictionaries(st.text(max_size=5), _leaves, max_size=3),
       form=st.sampled_from(_FORMS), indent=st.sampled_from([None, 1, 4]), before=st.text(max_size=20),
       after=st.text(max_size=20))
def test_a_call_the_user_pasted_is_never_taken(name, arguments, form, indent, before, after):
    pasted = json.dumps({"name": name, "arguments": arguments})
    answer = form.replace("{}", json.dumps({"name": name, "arguments": arguments}, indent=indent), 1)
    assert calls_in_text(answer, OFFERED) is not None
    assert calls_in_text(answer, OFFERED, quoted=f"{before}{pasted}{after}") is None


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["[TOOL_CALLS]", "[ARGS]", "memory", "{", "}", "[", "]", '"', " ", "null",
                                      ":", ",", "<tool_call>", "x"]), max_size=14).map("".join),
       quoted=st.text(max_size=10))
def test_any_text_with_the_marks_is_read_without_raising(text, quoted):
    calls_in_text(text, OFFERED, quoted=quoted)


_marked = st.lists(st.sampled_from(["[TOOL_CALLS]", "[ARGS]", "memory", "{", "}", '"', " ", "x"]), max_size=6).map(
    "".join)


@settings(max_examples=300, deadline=None)
@given(calls=st.lists(st.tuples(st.sampled_from(sorted(OFFERED)),
                                st.dictionaries(st.sampled_from(["text", "query"]), _marked, max_size=2)),
                      min_size=1, max_size=3),
       spaced=st.booleans())
def test_mistrals_name_args_calls_are_taken_whatever_their_arguments_hold(calls, spaced):
    # The marks inside an argument's string (a note about Mistral's format) are no call's beginning.
    gap = "\n" if spaced else ""
    answer = gap.join(f"[TOOL_CALLS]{name}[ARGS]{json.dumps(arguments)}" for name, arguments in calls)
    assert calls_in_text(answer, OFFERED) == (None, [(name, json.dumps(arguments)) for name, arguments in calls])
