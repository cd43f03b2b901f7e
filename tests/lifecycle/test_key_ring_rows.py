"""The key ring's stored rows: a corrupt row is refused in words naming the table and the key, a key's
secret never shows in a repr, and the key rotated in stays the signing one after a restart whatever the clock did."""

from __future__ import annotations

import re

import pytest

from lifecycle._capability import KeyRing

SECRET = b"s" * 32
TABLE = "the lifecycle journal's handle key table (lifecycle_keys)"


class SteppedClock:
    """Answers the given times in turn: a clock an operator (or NTP) set back between two calls."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def __call__(self) -> float:
        return self.times.pop(0)


def test_the_rotated_in_key_signs_after_a_restart_though_the_clock_was_set_back() -> None:
    ring = KeyRing(clock=SteppedClock(2000.0, 1000.0))
    old = ring.active_kid
    new = ring.rotate()
    reloaded = KeyRing([tuple(row) for row in ring.export()])
    assert reloaded.active_kid == new != old
    assert [row.kid for row in reloaded.export()] == [old, new]


def test_keys_made_with_a_steady_clock_keep_its_times() -> None:
    ring = KeyRing(clock=SteppedClock(1000.0, 2000.0))
    ring.rotate()
    assert [row.created_at for row in ring.export()] == [1000.0, 2000.0]


@pytest.mark.parametrize(
    ("row", "what"),
    [
        (("k", SECRET, 1.0), "a row that is not (kid, secret, created_at, retired_at)"),
        (None, "a row that is not (kid, secret, created_at, retired_at)"),
        (("k", SECRET, None, None), "key 'k' has a created_at that is not a finite number"),
        (("k", SECRET, "abc", None), "key 'k' has a created_at that is not a finite number"),
        (("k", SECRET, float("inf"), None), "key 'k' has a created_at that is not a finite number"),
        (("k", SECRET, float("nan"), None), "key 'k' has a created_at that is not a finite number"),
        (("k", SECRET, 1.0, "zz"), "key 'k' has a retired_at that is not a finite number"),
        (("k", b"short", 1.0, None), "key 'k' has no usable secret"),
        (("a.b", SECRET, 1.0, None), "malformed key id 'a.b'"),
    ],
)
def test_a_malformed_row_is_refused_naming_the_table_and_the_key(row: object, what: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(f"{TABLE}: {what}")):
        KeyRing([row])


def test_a_key_row_never_shows_its_secret() -> None:
    ring = KeyRing()
    row = ring.export()[0]
    for text in (repr(row), str(row), repr(ring.export()), f"{row}"):
        assert repr(row.secret) not in text and row.secret.hex() not in text
        assert row.kid in text and "secret=<hidden>" in text
    with pytest.raises(ValueError) as refused:
        KeyRing([(row.kid, row.secret, "when?", None)])
    assert repr(row.secret) not in str(refused.value)


def test_keys_rotated_in_one_tick_of_the_clock_come_out_in_their_order() -> None:
    # Tied on created_at, the signing key after a restart was the one whose random kid sorted last.
    ring = KeyRing(clock=lambda: 1000.0)
    kids = [ring.active_kid] + [ring.rotate() for _ in range(5)]
    times = [row.created_at for row in ring.export()]
    assert times == sorted(set(times)) and [row.kid for row in ring.export()] == kids
    assert KeyRing([tuple(row) for row in ring.export()]).active_kid == kids[-1]
