"""Output contracts on the event loop: patterns matched under a time budget, no ``$ref`` fetched."""

from __future__ import annotations

import http.server
import threading
import time

import pytest

from lifecycle import _output_schema
from lifecycle._output_schema import (
    MAX_CHECK_SECONDS,
    MAX_PATTERN_SECONDS,
    MAX_PATTERN_SIZE,
    schema_problem,
    validate_output,
)

# ``re`` backtracks through 2**60 ways of splitting the a's before it gives up: hours, on the loop.
BACKTRACKS = "^(a|a)+$"
LONG = "a" * 60 + "b"


def _timed(text, schema):
    started = time.monotonic()
    out = validate_output(text, schema)
    return out, time.monotonic() - started


def test_a_backtracking_pattern_is_an_error_of_the_answer_within_the_budget():
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": BACKTRACKS}}}
    (valid, errors, _), took = _timed(f'{{"name": "{LONG}"}}', schema)
    assert not valid and took < 4 * MAX_PATTERN_SECONDS + 1
    assert errors == [f"$.name: '{LONG}' could not be checked against '{BACKTRACKS}': matching took longer than the "
                      f"{MAX_PATTERN_SECONDS} s an answer's patterns may take (the pattern backtracks)"]


def test_the_budget_is_for_the_whole_answer_not_each_string():
    schema = {"type": "array", "items": {"type": "string", "pattern": BACKTRACKS}}
    (valid, errors, _), took = _timed("[" + ",".join([f'"{LONG}"'] * 40) + "]", schema)
    assert not valid and took < 4 * MAX_PATTERN_SECONDS + 1
    assert errors[-1] == "... and 20 more"


def test_a_backtracking_property_name_pattern_is_bounded_too():
    schema = {"type": "object", "patternProperties": {BACKTRACKS: {"type": "integer"}}, "additionalProperties": False}
    (valid, errors, _), took = _timed(f'{{"{LONG}": 1}}', schema)
    assert not valid and took < 4 * MAX_PATTERN_SECONDS + 1
    assert len(errors) == 1 and errors[0].startswith(f"$: '{LONG}' could not be checked against")


@pytest.mark.parametrize(("text", "schema", "expected"), [
    ('{"id": "ab-12"}', {"properties": {"id": {"pattern": r"^[a-z]+-\d+$"}}}, []),
    ('{"id": "AB"}', {"properties": {"id": {"pattern": r"^[a-z]+$"}}}, ["$.id: 'AB' does not match '^[a-z]+$'"]),
    ('{"x_1": 1, "y": 2}', {"patternProperties": {"^x_": {"type": "integer"}}, "additionalProperties": False},
     ["$: 'y' does not match any of the regexes: '^x_'"]),
    ('{"x_1": "no"}', {"patternProperties": {"^x_": {"type": "integer"}}}, ["$.x_1: 'no' is not of type 'integer'"]),
    ('{"a": 1, "b": 2, "c": 3}', {"properties": {"a": {}}, "additionalProperties": False},
     ["$: Additional properties are not allowed ('b', 'c' were unexpected)"]),
    ('{"b": "x"}', {"additionalProperties": {"type": "integer"}}, ["$.b: 'x' is not of type 'integer'"]),
    ('"ab"', {"$schema": "http://json-schema.org/draft-07/schema#", "pattern": "^a$"},
     ["$: 'ab' does not match '^a$'"]),
])
def test_patterns_mean_what_they_meant(text, schema, expected):
    valid, errors, _ = validate_output(text, schema)
    assert (valid, errors) == (not expected, expected)


class _Counting(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self):  # noqa: N802
        type(self).hits += 1
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_ref_to_a_url_is_never_fetched():
    # jsonschema's default fetched it with urlopen, no timeout, on the event loop: wherever the model said.
    server = http.server.HTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/schema.json"
        valid, errors, _ = validate_output('{"a": 1}', {"properties": {"a": {"$ref": url}}})
    finally:
        server.shutdown()
        server.server_close()
    assert not valid and errors == [f"$: the schema could not be applied: Unresolvable: {url}"]
    assert _Counting.hits == 0


def test_a_local_ref_still_resolves():
    schema = {"$defs": {"name": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/name"}}}
    assert validate_output('{"a": 1}', schema)[:2] == (False, ["$.a: 1 is not of type 'string'"])
    assert validate_output('{"a": "x"}', schema)[:2] == (True, [])


def test_a_pattern_that_unrolls_too_large_is_refused_before_any_child_starts():
    # `regex` unrolls repeats as it compiles: this one took the process's memory until it was killed.
    pattern = "((((a{100}){100}){100}){100})"
    assert schema_problem({"properties": {"a": {"pattern": pattern}}}) == (
        f"output_schema is not usable: pattern '{pattern}' is 100000000 characters long with its repeats unrolled; "
        f"at most {MAX_PATTERN_SIZE} (limit a string's length with maxLength, not with a pattern)")
    assert schema_problem({"patternProperties": {pattern: {}}}) is not None
    assert schema_problem({"pattern": r"^(?:\w{1,20}\s){1,100}$|^\d{3}-\d{4}$|(?=x)(?!y)(?>z)(a)?(?(1)b|c)"}) is None


def test_pattern_properties_beside_unevaluated_properties_are_refused():
    # jsonschema's unevaluatedProperties matches patternProperties with `re` itself, unbounded.
    schema = {"patternProperties": {"^x": {}}, "unevaluatedProperties": False}
    assert schema_problem(schema) == (
        "output_schema is not usable: patternProperties cannot be combined with unevaluatedProperties in an output "
        "contract (their patterns could not be matched under a time limit); use additionalProperties")
    assert schema_problem({"unevaluatedProperties": False, "properties": {"a": {"pattern": "^x"}}}) is None


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_a_pattern_overrunning_past_the_whole_checks_time_is_still_named(monkeypatch):
    # On a loaded machine a match ran on past its timeout, and past the check's own deadline: the answer was
    # told that checking took too long, not which pattern backtracked, and the other values went unchecked.
    clock = _Clock()
    monkeypatch.setattr(_output_schema, "time", clock)

    class Overruns:
        def search(self, text: str, timeout: float) -> None:
            clock.now += MAX_CHECK_SECONDS + 1
            raise TimeoutError

    monkeypatch.setattr(_output_schema, "_compiled", lambda pattern: Overruns())
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": BACKTRACKS},
                                               "size": {"type": "integer"}}}
    valid, errors, _ = validate_output(f'{{"name": "{LONG}", "size": "big"}}', schema)
    assert not valid
    assert errors == [f"$.name: '{LONG}' could not be checked against '{BACKTRACKS}': matching took longer than the "
                      f"{MAX_PATTERN_SECONDS} s an answer's patterns may take (the pattern backtracks)",
                      "$.size: 'big' is not of type 'integer'"]
