"""``model.max_concurrent_requests``: unset by default (no bound), else a whole number of requests, 1 or more."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError


def test_unset_by_default_and_a_whole_number_is_taken(load):
    assert load("model: {provider: openai}").config.model.max_concurrent_requests is None
    assert load("model: {provider: openai, max_concurrent_requests: 2}").config.model.max_concurrent_requests == 2


@pytest.mark.parametrize("written, expected", [
    ("0", "an integer ≥ 1, got 0"),
    ("-1", "an integer ≥ 1, got -1"),
    ("1.5", "an integer ≥ 1 or null, got 1.5"),
    ("two", 'an integer ≥ 1 or null, got "two"'),
    ("true", "an integer ≥ 1 or null, got true"),
])
def test_a_bound_is_a_whole_number_from_one_up(load, written, expected):
    with pytest.raises(ConfigError) as info:
        load(f"model: {{provider: openai, max_concurrent_requests: {written}}}")
    assert info.value.errors == [f"model.max_concurrent_requests: expected {expected}"]
