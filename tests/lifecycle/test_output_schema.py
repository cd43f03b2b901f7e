"""Output contracts: schema checks, the child's contract prompt, answer extraction and validation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lifecycle._output_schema import (
    MAX_ERROR_CHARS,
    MAX_ERRORS,
    MAX_SCHEMA_CHARS,
    SCHEMA_NOTE,
    coerce_schema,
    contract_prompt,
    correction_prompt,
    extract_json,
    schema_problem,
    validate_output,
)

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"],
}
ITEMS = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "object", "required": ["name"]}}},
    "required": ["items"],
}


# --- schema_problem / coerce_schema -------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        PERSON,
        {},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": {"type": "string"}},
        {"$schema": "https://example.com/unknown-dialect", "type": "object"},  # falls back to 2020-12
        json.dumps(PERSON),  # double-encoded by a model
    ],
)
def test_valid_schemas_have_no_problem(schema):
    assert schema_problem(schema) is None


def test_invalid_schema_names_what_and_where():
    bad = {"type": "object", "properties": {"name": {"type": "strng"}}}
    assert schema_problem(bad) == (
        "output_schema is not a valid JSON Schema: "
        "'strng' is not valid under any of the given schemas (at properties/name/type)"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1, 2], "output_schema must be a JSON object (a JSON Schema), got list"),
        (5, "output_schema must be a JSON object (a JSON Schema), got int"),
        (None, "output_schema must be a JSON object (a JSON Schema), got NoneType"),
        (True, "output_schema must be a JSON object (a JSON Schema), got bool"),
        ("not json", "output_schema must be a JSON object (a JSON Schema), got a non-JSON string"),
        ('"{}"', "output_schema must be a JSON object (a JSON Schema), got str"),
        ("[" * 5000, "output_schema must be a JSON object (a JSON Schema), got a string nested too deeply to read"),
        ('{"type": 1}', "output_schema is not a valid JSON Schema: 1 is not valid under any of the given schemas (at type)"),
        ({"pattern": "("}, "output_schema is not a valid JSON Schema: '(' is not a 'regex' (at pattern)"),
        ({"$schema": 5}, "output_schema is not a valid JSON Schema: 5 is not of type 'string' (at $schema)"),
        # Printed whole into the child's prompt, checked on the event loop (a 1.3 MB one held it for 4 s).
        ({"description": "é" * MAX_SCHEMA_CHARS}, f"output_schema is {MAX_SCHEMA_CHARS + 18} characters as JSON; "
         f"at most {MAX_SCHEMA_CHARS}. Keep it to the answer's shape and put explanations in `context`."),
        ({"maximum": float("nan")},  # json reads NaN; the contract prompt would print it, which is not JSON
         "output_schema must be plain JSON: Out of range float values are not JSON compliant"),
    ],
)
def test_schema_problems(value, message):
    assert schema_problem(value) == message
    with pytest.raises(ValueError) as caught:
        coerce_schema(value)
    assert str(caught.value) == message


def test_non_json_values_are_a_problem():
    problem = schema_problem({"type": "object", "default": {1, 2}})
    assert problem is not None and problem.startswith("output_schema must be plain JSON")


def test_problems_are_one_line():
    deep: dict = {}
    for _ in range(5000):
        deep = {"items": deep}
    for value in ({"type": "object", "properties": {"x": {"type": "bogus\nline"}}}, deep):
        problem = schema_problem(value)
        assert problem is not None and "\n" not in problem


def test_a_schema_of_the_largest_size_is_taken():
    largest = {"description": "é" * (MAX_SCHEMA_CHARS - 18)}
    assert coerce_schema(largest) is largest


def test_coerce_returns_the_schema_dict():
    assert coerce_schema(PERSON) is PERSON
    assert coerce_schema(json.dumps(PERSON)) == PERSON


# --- contract_prompt ----------------------------------------------------------------------------


def test_contract_prompt_states_the_rules_and_carries_the_schema():
    prompt = contract_prompt(PERSON)
    assert "ONLY a single JSON value" in prompt
    assert "no prose" in prompt and "no code fence" in prompt
    assert json.dumps(PERSON, indent=2) in prompt


# --- extract_json -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  [1, 2, 3]\n', [1, 2, 3]),
        ('"just a string"', "just a string"),  # any bare JSON value counts
        ("42", 42),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n[{"a": 1}]\n```', [{"a": 1}]),
        ('Sure! Here it is:\n```json\n{"a": 1}\n```\nLet me know.', {"a": 1}),
        ('The result is {"a": {"b": [1, 2]}} as requested.', {"a": {"b": [1, 2]}}),
        ('Results: [{"n": 1}, {"n": 2}] done', [{"n": 1}, {"n": 2}]),
        ('Note {"text": "a } brace and a { brace and \\"quotes\\""} end', {"text": 'a } brace and a { brace and "quotes"'}),
        ('See [1] and [2]. Answer: {"a": 1, "b": 2}', {"a": 1, "b": 2}),  # longest, not the citation
        ('Broken {"a": 1,} then fixed {"a": 2}', {"a": 2}),
        ('```json\n{"from": "fence"}\n```\nalso {"from": "prose", "longer": true}', {"from": "fence"}),
        ('```json\nHere: {"a": 1}\n```', {"a": 1}),  # prose inside the fence
        ('```json\n{"a": 1}', {"a": 1}),  # unterminated fence
        ('{"code": "```json\\n{}\\n```"}', {"code": "```json\n{}\n```"}),  # a fence inside a string
        ('Here:\n```json\n{"a": {"b": 1}, "c": "```"}\n```\nThanks', {"a": {"b": 1}, "c": "```"}),
        ('```\n1. list the files\n```\nthen {"a": 1}', {"a": 1}),  # "1" is not the fenced block
    ],
)
def test_extract_json(text, value):
    assert extract_json(text) == (value, None)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the answer is empty"),
        ("   \n", "the answer is empty"),
        ("I could not finish the task.", "the answer contains no JSON object or array"),
        ("NaN", "the answer contains no JSON object or array"),
    ],
)
def test_extract_json_problems(text, problem):
    assert extract_json(text) == (None, problem)


@pytest.mark.parametrize("text", ['{"a": 1', '{"a": 1,}', "[1, 2", '```json\n{"a": }\n```', "{'a': 1}"])
def test_broken_json_is_a_problem(text):
    value, problem = extract_json(text)
    assert value is None
    assert problem.startswith("the answer contains no valid JSON object or array (first try: ")


def test_pathological_text_is_bounded():
    for text in ("[" * 100_000, "{" * 100_000, '{"a": [' * 20_000, "[1, " * 50_000, "```\n[1, " * 20_000):
        value, problem = extract_json(text)
        assert value is None and problem


# Text heavy in the characters extraction trips over: fences, braces, quotes, escapes.
tricky_text = st.text() | st.text(alphabet="`{}[]\"\\\n :,json")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | tricky_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(tricky_text, json_values, max_size=6))
def test_fenced_dict_round_trips(v):
    assert extract_json("Here you go:\n```json\n" + json.dumps(v) + "\n```\nThanks") == (v, None)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(tricky_text, json_values, min_size=1, max_size=6))
def test_dict_in_prose_round_trips(v):
    assert extract_json("Result: " + json.dumps(v) + " (done)") == (v, None)


# --- validate_output ----------------------------------------------------------------------------


def test_valid_answer():
    assert validate_output('```json\n{"name": "Ada", "age": 36}\n```', PERSON) == (
        True, [], {"name": "Ada", "age": 36},
    )


def test_error_lines_name_path_and_message():
    valid, errors, value = validate_output('{"items": [{"name": "a"}, {}]}', ITEMS)
    assert (valid, errors, value) == (False, ["$.items[1]: 'name' is a required property"], {"items": [{"name": "a"}, {}]})


def test_errors_are_sorted_by_path_with_numeric_indices():
    schema = {
        "type": "object",
        "properties": {
            "z": {"type": "string"},
            "a": {"type": "array", "items": {"type": "integer"}},
            "odd key": {"type": "string"},
        },
        "required": ["missing"],
    }
    answer = {"z": 1, "a": ["x"] * 11, "odd key": 2}
    valid, errors, _ = validate_output(json.dumps(answer), schema)
    assert not valid
    assert errors == [
        "$: 'missing' is a required property",
        *[f"$.a[{i}]: 'x' is not of type 'integer'" for i in range(11)],  # [10] after [9], not after [1]
        '$["odd key"]: 2 is not of type \'string\'',
        "$.z: 1 is not of type 'string'",
    ]


def test_errors_are_stable():
    answer = json.dumps({"items": [{}] * 5})
    assert validate_output(answer, ITEMS) == validate_output(answer, ITEMS)


def test_errors_are_capped():
    answer = json.dumps({"items": [{}] * (MAX_ERRORS + 7)})
    valid, errors, _ = validate_output(answer, ITEMS)
    assert not valid
    assert len(errors) == MAX_ERRORS + 1
    assert errors[MAX_ERRORS - 1] == f"$.items[{MAX_ERRORS - 1}]: 'name' is a required property"
    assert errors[-1] == "... and 7 more"


def test_long_error_lines_are_cut():
    answer = json.dumps({"name": "x" * 5000})
    valid, errors, _ = validate_output(answer, {"properties": {"name": {"maxLength": 3}}})
    assert not valid and len(errors) == 1
    assert len(errors[0]) == MAX_ERROR_CHARS and errors[0].endswith("…")
    assert errors[0].startswith("$.name: 'xxx")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "$: the answer is empty"),
        ("Sorry, I could not do it.", "$: the answer contains no JSON object or array"),
    ],
)
def test_parse_failure_is_one_error(text, error):
    assert validate_output(text, PERSON) == (False, [error], None)


def test_unusable_schema_is_one_error_not_an_exception():
    valid, errors, value = validate_output("{}", {"$ref": "http://example.com/elsewhere.json"})
    assert not valid and value == {}
    assert len(errors) == 1 and errors[0].startswith("$: the schema could not be applied: ")


def test_schema_dialect_is_honoured():
    # Draft 4's boolean exclusiveMaximum means 5 is out of range; 2020-12 would reject the schema.
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5, "exclusiveMaximum": True}
    assert schema_problem(draft4) is None
    assert validate_output("5", draft4)[0] is False
    assert validate_output("4", draft4)[0] is True


# --- correction_prompt / SCHEMA_NOTE ------------------------------------------------------------


def test_correction_prompt_has_the_exact_errors_and_not_the_schema():
    _, errors, _ = validate_output('{"age": -1}', PERSON)
    prompt = correction_prompt(errors)
    assert errors == ["$: 'name' is a required property", "$.age: -1 is less than the minimum of 0"]
    for error in errors:
        assert f"- {error}\n" in prompt
    assert "ONLY the corrected JSON" in prompt
    assert json.dumps(PERSON) not in prompt and json.dumps(PERSON, indent=2) not in prompt
    assert '"properties"' not in prompt


def test_schema_note_says_the_text_is_unvalidated():
    assert "unvalidated" in SCHEMA_NOTE and "output_schema" in SCHEMA_NOTE
