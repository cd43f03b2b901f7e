"""Capability tokens: forgery, tampering, versions and key rotation all fail closed, never raise."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lifecycle._capability import KeyRing, KeyRow, sign, verify
from lifecycle._contract import CONTRACT_VERSION, SubagentHandle, SubagentLifecycleError

IDENTITY = {
    "subagent_id": "sa-0-1a2b3c4d",
    "parent_session_id": "telegram:42",
    "correlation_id": "job-7",
    "created_at": 1_700_000_000.123456,
    "role": "orchestrator",
    "depth": 1,
    "provider": "openrouter",
    "model": "some/model",
}


def issue(ring: KeyRing, **changes: Any) -> SubagentHandle:
    fields = dict(IDENTITY, **changes)
    return SubagentHandle(contract_version=CONTRACT_VERSION, capability=sign(ring, **fields), **fields)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_a_signed_handle_verifies_even_after_a_json_round_trip() -> None:
    ring = KeyRing()
    h = issue(ring)
    assert verify(ring, h)
    assert verify(ring, SubagentHandle.from_dict(json.loads(json.dumps(h.to_dict()))))
    assert h.capability.startswith(f"v1.{ring.active_kid}.")


def test_a_handle_does_not_verify_under_another_ring() -> None:
    assert not verify(KeyRing(), issue(KeyRing()))


def test_another_contract_version_fails() -> None:
    ring = KeyRing()
    assert not verify(ring, dataclasses.replace(issue(ring), contract_version=CONTRACT_VERSION + 1))


def test_separators_inside_fields_cannot_collide() -> None:
    # With "a|b" + "c" vs "a" + "b|c" a joined-string MAC would be identical.
    ring = KeyRing()
    one = issue(ring, subagent_id="a|b", parent_session_id="c")
    two = issue(ring, subagent_id="a", parent_session_id="b|c")
    assert one.capability != two.capability
    assert not verify(ring, dataclasses.replace(two, capability=one.capability))
    assert issue(ring, parent_session_id=None).capability != issue(ring, parent_session_id="").capability


def test_rotated_keys_keep_verifying_and_new_handles_use_the_new_key() -> None:
    ring = KeyRing()
    old_kid, old = ring.active_kid, issue(ring)
    new_kid = ring.rotate()
    new = issue(ring)
    assert new_kid != old_kid and ring.active_kid == new_kid
    assert new.capability.split(".")[1] == new_kid
    assert verify(ring, old) and verify(ring, new)


def test_retired_keys_revoke_their_handles_only() -> None:
    ring = KeyRing()
    old_kid, old = ring.active_kid, issue(ring)
    ring.rotate()
    new = issue(ring)
    ring.retire(old_kid)
    ring.retire(old_kid)  # idempotent
    assert not verify(ring, old) and verify(ring, new)


def test_retiring_the_active_key_rotates_so_signing_goes_on() -> None:
    ring = KeyRing()
    kid = ring.active_kid
    before = issue(ring)
    ring.retire(kid)
    assert ring.active_kid != kid
    assert not verify(ring, before) and verify(ring, issue(ring))


def test_retiring_an_unknown_kid_raises() -> None:
    with pytest.raises(KeyError):
        KeyRing().retire("nope")


def test_keys_export_and_import_with_their_retirement() -> None:
    clock = FakeClock()
    ring = KeyRing(clock=clock)
    first, first_handle = ring.active_kid, issue(ring)
    second = ring.rotate()
    second_handle = issue(ring)
    ring.retire(first)
    rows = ring.export()
    assert [row.kid for row in rows] == [first, second] and rows[0].retired_at is not None
    loaded = KeyRing([tuple(row) for row in rows])
    assert loaded.active_kid == second
    assert verify(loaded, second_handle) and not verify(loaded, first_handle)
    assert loaded.export() == rows


def test_loading_only_retired_keys_creates_a_signing_key() -> None:
    ring = KeyRing()
    kid = ring.active_kid
    rows = [KeyRow(kid, ring.export()[0].secret, 1.0, 2.0)]
    loaded = KeyRing(rows)
    assert loaded.active_kid != kid and len(loaded.export()) == 2


@pytest.mark.parametrize(
    "row", [("", b"s" * 32, 1.0, None), ("a.b", b"s" * 32, 1.0, None), ("k", b"short", 1.0, None), ("k", "text" * 10, 1.0, None)]
)
def test_malformed_key_rows_are_refused(row: tuple) -> None:
    with pytest.raises(ValueError):
        KeyRing([row])


# --- forgery and tampering ---------------------------------------------------------------


def forged_capabilities(ring: KeyRing, genuine: str) -> list[str]:
    version, kid, digest = genuine.split(".")
    flipped = ("1" if digest[0] == "0" else "0") + digest[1:]
    return [
        "",
        "forged",
        "v1..",
        f"{version}.{kid}.{flipped}",
        f"{version}.{kid}.{digest.upper()}",
        f"v2.{kid}.{digest}",
        f"V1.{kid}.{digest}",
        f"v1.deadbeef.{digest}",
        f"v1.{kid}.{digest}.extra",
        f"v1.{kid}.{digest[:-1]}",
        f"v1.{kid}.{'é' * 64}",
        f"v1.{kid}." + "\ud800" * 64,
        f"v1.{kid}.{digest}" + "0" * 100_000,
        f"v1.{kid}." + "0" * 64,
    ]


def test_forged_capabilities_fail_without_raising() -> None:
    ring = KeyRing()
    genuine = issue(ring)
    for capability in forged_capabilities(ring, genuine.capability):
        assert not verify(ring, dataclasses.replace(genuine, capability=capability)), capability


@pytest.mark.parametrize("garbage", [None, 0, "v1.a.b", {"capability": "x"}, object(), SubagentHandle])
def test_non_handles_fail_without_raising(garbage: object) -> None:
    assert verify(KeyRing(), garbage) is False


FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "subagent_id": st.text(min_size=1),
    "parent_session_id": st.none() | st.text(),
    "correlation_id": st.none() | st.text(),
    "created_at": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**52), 2**52),
    "role": st.text(),
    "depth": st.integers(min_value=0),
    "provider": st.none() | st.text(),
    "model": st.none() | st.text(),
}


@settings(deadline=None)
@given(st.data())
def test_tampering_with_any_single_field_fails(data: st.DataObject) -> None:
    ring = KeyRing()
    genuine = issue(ring)
    name = data.draw(st.sampled_from(sorted(FIELD_VALUES)))
    value = data.draw(FIELD_VALUES[name])
    assume(value != getattr(genuine, name) or type(value) is not type(getattr(genuine, name)))
    tampered = dataclasses.replace(genuine, **{name: value})
    # Only an int equal to the float created_at is "the same identity": it signs identically.
    same = name == "created_at" and value == genuine.created_at
    assert verify(ring, tampered) is same


@settings(deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(issue(KeyRing()).to_dict())), st.none() | st.integers() | st.floats() | st.text() | st.booleans()))
def test_garbage_dicts_never_become_handles_that_verify(data: dict) -> None:
    ring = KeyRing()
    template = issue(ring).to_dict()
    candidate = dict(template, **data)
    assume(candidate.get("capability") != template["capability"])  # a copied genuine token is not garbage
    try:
        parsed = SubagentHandle.from_dict(candidate)
    except SubagentLifecycleError:
        return
    assert verify(ring, parsed) is False


@settings(deadline=None)
@given(st.text())
def test_random_capability_text_never_verifies(text: str) -> None:
    ring = KeyRing()
    assert verify(ring, dataclasses.replace(issue(ring), capability=text)) is False


def test_the_ring_knows_whether_any_key_was_ever_retired():
    ring = KeyRing()
    assert not ring.has_retired
    first = ring.active_kid
    ring.rotate()
    assert not ring.has_retired
    ring.retire(first)
    assert ring.has_retired and KeyRing(ring.export()).has_retired


@pytest.mark.parametrize("secret_bytes", [16, 32, 64, 65, 200])
def test_tokens_are_the_hmac_sha256_of_the_identity_message(secret_bytes: int) -> None:
    """The reused keyed HMAC gives exactly `hmac.new`'s digest, for keys shorter and longer than a block."""
    import hashlib
    import hmac

    from lifecycle._capability import _message

    secret = bytes(range(256))[:secret_bytes]
    ring = KeyRing([("k1", secret, 1.0, None)])
    handle = issue(ring)
    expected = hmac.new(secret, _message(**IDENTITY), hashlib.sha256).hexdigest()
    assert handle.capability == f"v1.k1.{expected}"
    assert verify(ring, handle)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "subagent_id": st.text(min_size=1), "parent_session_id": st.none() | st.text(),
    "correlation_id": st.none() | st.text(), "created_at": st.floats(allow_nan=False, allow_infinity=False),
    "role": st.sampled_from(["leaf", "orchestrator"]), "depth": st.integers(0, 5),
    "provider": st.none() | st.text(), "model": st.none() | st.text(),
}), min_size=1, max_size=5), st.binary(min_size=16, max_size=130))
def test_every_token_is_the_hmac_of_its_message_whatever_was_signed_before(identities: list, secret: bytes) -> None:
    """The key's hash states are reused for every message: signing one must leave nothing behind for the next."""
    import hashlib
    import hmac

    from lifecycle._capability import _message

    ring = KeyRing([("k1", secret, 1.0, None)])
    for identity in identities:
        handle = issue(ring, **identity)
        expected = hmac.new(secret, _message(**identity), hashlib.sha256).hexdigest()
        assert handle.capability == f"v1.k1.{expected}"
        assert verify(ring, handle)
