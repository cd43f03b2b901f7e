"""docs/lifecycle.md "Requests that fail closed": an integer too long for Python to write as text (more digits than
`sys.get_int_max_str_digits()`, 4300 by default) is named with its path, as every other value JSON cannot carry is,
not refused as "metadata must be JSON-serializable." for the plugin to search its metadata for it."""

from __future__ import annotations

import sys

import pytest

from lifecycle import SubagentLaunchRequest, SubagentLifecycleError
from lifecycle._contract import validate_request

LONG = "is an integer of more than 4300 digits, which JSON cannot carry (Python's limit for integers as text): use a" \
       " string."


def rejection(metadata) -> str:
    with pytest.raises(SubagentLifecycleError) as err:
        validate_request(SubagentLaunchRequest("x", metadata=metadata))
    assert err.value.code == "INVALID_REQUEST"
    return str(err.value)


@pytest.mark.parametrize(("metadata", "where"), [
    ({"n": 10**5000}, "metadata['n']"),
    ({"n": [1, {"m": -(10**4300)}]}, "metadata['n'][1]['m']"),  # 4,301 digits, the sign aside
])
def test_an_integer_too_long_for_text_is_named_with_its_path(metadata, where):
    assert sys.get_int_max_str_digits() == 4300
    assert rejection(metadata) == f"{where} {LONG}"


def test_an_integer_at_the_limit_passes_and_long_ones_past_the_size_are_refused_for_it():
    validate_request(SubagentLaunchRequest("x", metadata={"n": 10**4299 - 1}))  # 4,299 nines
    # Counted as the digits it has at least, not as one byte: refused for size before any is made text.
    assert rejection({"n": [10**4000, 10**4000, 10**4000]}) == "metadata exceeds 8192 bytes."


def test_the_limit_named_is_the_one_in_force():
    sys.set_int_max_str_digits(640)
    try:
        assert rejection({"n": 10**700}) == f"metadata['n'] {LONG.replace('4300', '640')}"
    finally:
        sys.set_int_max_str_digits(4300)
