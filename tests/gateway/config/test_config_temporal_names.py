"""`lifecycle.temporal.task_queue` and `namespace` are names Temporal matches exactly: a space at an end, or a
control character, kept as written, sends the gateway's children to a queue no worker whose file differs in spacing
polls (and the name reads the same in the log either way). Refused, naming the key and what is wrong."""

from __future__ import annotations

import json

import pytest

from gateway.config import ConfigError


@pytest.mark.parametrize("key", ["task_queue", "namespace"])
@pytest.mark.parametrize(("value", "problem"), [
    (" q", 'lifecycle.temporal.{key}: " q" starts with whitespace'),
    ("q ", 'lifecycle.temporal.{key}: "q " ends with whitespace'),
    ("q\t", 'lifecycle.temporal.{key}: "q\\t" ends with whitespace'),
    ("q\n", 'lifecycle.temporal.{key}: "q\\n" ends with whitespace'),
    ("a\tb", 'lifecycle.temporal.{key}: "a\\tb" holds a control character (U+0009)'),
    ("a\x7fb", 'lifecycle.temporal.{key}: "a\x7fb" holds a control character (U+007F)'),
    ("a\u200bb", 'lifecycle.temporal.{key}: "a\u200bb" holds an invisible character (U+200B)'),
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
