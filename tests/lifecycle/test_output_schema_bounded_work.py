"""Output contracts whose subschemas apply again and again are bounded on the event loop: refused up front
when their ``$ref``s multiply the checks of one value, cut off by a time budget when a nested answer does."""

from __future__ import annotations

import time

from lifecycle._output_schema import MAX_APPLICATIONS, MAX_CHECK_SECONDS, schema_problem, validate_output


def doubling(levels: int) -> dict:
    """Each level an ``allOf`` of two ``$ref``s to the level below: 2**levels checks of one value, in a few KB."""
    defs = {"l0": {"type": "string"}}
    for i in range(1, levels + 1):
        defs[f"l{i}"] = {"allOf": [{"$ref": f"#/$defs/l{i - 1}"}, {"$ref": f"#/$defs/l{i - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/l{levels}"}


def test_refs_that_multiply_the_checks_of_one_value_are_refused_before_any_child_starts():
    started = time.monotonic()
    problem = schema_problem(doubling(30))  # 2**30 checks of the answer: hours on the loop
    assert time.monotonic() - started < 1
    assert problem == (f"output_schema is not usable: its $refs and allOf/anyOf/oneOf/… apply more than "
                       f"{MAX_APPLICATIONS:,} subschemas to one value (each $ref to a subschema that refers on twice "
                       "doubles them); name each once")


def test_refs_shared_a_few_times_are_taken_and_checked():
    schema = doubling(8)
    assert schema_problem(schema) is None
    assert validate_output('"x"', schema)[:2] == (True, [])
    assert validate_output("1", schema)[0] is False


def test_a_nested_answer_that_each_level_checks_twice_is_an_error_within_the_budget():
    # Every level applies the schema twice to the level below: 2**depth checks, found only in the answer.
    schema = {"$defs": {"node": {"type": "object", "properties": {
        "next": {"allOf": [{"$ref": "#/$defs/node"}, {"$ref": "#/$defs/node"}]}}}}, "$ref": "#/$defs/node"}
    assert schema_problem(schema) is None
    assert validate_output('{"next": {"next": {}}}', schema)[:2] == (True, [])
    text = '{"next": ' * 16 + "{}" + "}" * 16
    started = time.monotonic()
    valid, errors, _ = validate_output(text, schema)
    assert time.monotonic() - started < 2 * MAX_CHECK_SECONDS + 0.5
    assert not valid
    assert errors == [f"$: the answer could not be checked against output_schema: checking took longer than the "
                      f"{MAX_CHECK_SECONDS} s a check may take (the schema applies its subschemas to the same "
                      "values over and over), so it was not shown to match"]


def test_the_budget_leaves_a_nested_answer_as_deep_as_python_allows():
    # Checked at each keyword without a frame of its own: one per level left 164 levels of this, not 247.
    schema = {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
              "$ref": "#/$defs/node"}
    assert validate_output('{"next": ' * 200 + "{}" + "}" * 200, schema)[:2] == (True, [])
