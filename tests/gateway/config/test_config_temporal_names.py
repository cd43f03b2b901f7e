"""`lifecycle.temporal.task_queue` and `namespace` are names Temporal matches exactly: a space at an end, or a
control character, kept as written, sends the gateway's children to a queue no worker whose file differs in spacing
polls (and the name reads the same in the log either way). Refused, naming the key and what is wrong."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.config import ConfigError, rules


@pytest.mark.parametrize("key", ["task_queue", "namespace"])
@pytest.mark.parametrize(("value", "problem"), [
    (" q", 'lifecycle.temporal.{key}: " q" starts with whitespace'),
    ("q ", 'lifecycle.temporal.{key}: "q " ends with whitespace'),
    ("q\t", 'lifecycle.temporal.{key}: "q\\t" ends with whitespace'),
    ("q\n", 'lifecycle.temporal.{key}: "q\\n" ends with whitespace'),
    ("a\tb", 'lifecycle.temporal.{key}: "a\\tb" holds a control character (U+0009)'),
    ("a\x7fb", 'lifecycle.temporal.{key}: "a\\u007fb" holds a control character (U+007F)'),
    ("a\u200bb", 'lifecycle.temporal.{key}: "a\\u200bb" holds an invisible character (U+200B)'),
])
def test_a_name_with_spacing_at_an_end_or_a_control_character_is_refused(load, key, value, problem):
    with pytest.raises(ConfigError) as caught:
        load(json.dumps({"lifecycle": {"temporal": {key: value}}}))
    [error] = [e for e in caught.value.errors if e.startswith(f"lifecycle.temporal.{key}:")]
    assert error.startswith(problem.format(key=key)), error
    assert error.endswith("; remove it")


@pytest.mark.parametrize("value", ["switchboard-children", "team a/children", "çocuklar.kuyruk"])
def test_names_inner_spaces_and_letters_of_any_script_are_kept(load, value):
    config, _ = load(json.dumps({"lifecycle": {"temporal": {"task_queue": value, "namespace": value}}}))
    assert (config.lifecycle.temporal.task_queue, config.lifecycle.temporal.namespace) == (value, value)


# From review of d3c18a7a: the refused name is shown so that the error stays one readable line: the very character
# it refuses (NEL and U+2028 end a line, U+202E turns the rest of the line around, CSI and DEL are terminal controls)
# was printed raw, and a lone surrogate (YAML's "\ud83d", or `${VAR}` bytes that are no UTF-8) made the error one
# that could not be printed at all.
@pytest.mark.parametrize(("value", "shown"), [
    ("q\u0085", '"q\\u0085" ends with whitespace'),
    ("q\u2028", '"q\\u2028" ends with whitespace'),
    ("a\u202eb", '"a\\u202eb" holds an invisible character (U+202E)'),
    ("a\x9b31mb", '"a\\u009b31mb" holds a control character (U+009B)'),
    ("a\x7fb", '"a\\u007fb" holds a control character (U+007F)'),
    ("a\tb\u00a0c", '"a\\tb\\u00a0c" holds a control character (U+0009)'),
])
def test_the_refused_name_is_shown_in_printable_characters(load, value, shown):
    with pytest.raises(ConfigError) as caught:
        load(json.dumps({"lifecycle": {"temporal": {"task_queue": value}}}))
    [error] = [e for e in caught.value.errors if e.startswith("lifecycle.temporal.task_queue:")]
    assert error.startswith(f"lifecycle.temporal.task_queue: {shown}"), error
    assert error.isprintable(), error


# From review of d3c18a7a: a line or paragraph separator inside a name breaks the lines that show it as any line break
# does, and half of a UTF-16 pair cannot be sent at all (the client fails encoding it, and the gateway's watch of the
# task queue ended on that error): refused as control characters are.
@pytest.mark.parametrize(("value", "what"), [
    ("a\u2028b", "a line break (U+2028)"),
    ("a\u2029b", "a line break (U+2029)"),
    ("a\ud83db", "half of a UTF-16 pair (U+D83D)"),
])
def test_a_line_separator_or_half_a_utf16_pair_inside_a_name_is_refused(load, value, what):
    with pytest.raises(ConfigError) as caught:
        load(json.dumps({"lifecycle": {"temporal": {"namespace": value}}}))
    [error] = [e for e in caught.value.errors if e.startswith("lifecycle.temporal.namespace:")]
    assert f" holds {what}: " in error, error
    assert error.isprintable(), error
    error.encode()


@pytest.mark.parametrize("value", ["my-ns.abc12", "कतार-बच्चे", "очередь", "子队列"])
def test_names_with_marks_and_other_scripts_pass(load, value):
    config, _ = load(json.dumps({"lifecycle": {"temporal": {"task_queue": value, "namespace": value}}}))
    assert config.lifecycle.temporal.task_queue == value


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_any_name_is_kept_or_refused_in_one_printable_line(name):
    problem = rules._temporal_name_problem(name)
    bad = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    expected = bool(name.strip()) and (name != name.strip() or any(unicodedata.category(c) in bad for c in name))
    assert (problem is not None) == expected, (name, problem)
    if problem is not None:
        assert problem.isprintable(), problem
        problem.encode()
