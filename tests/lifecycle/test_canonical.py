"""The direct encoders write exactly the bytes json.JSONEncoder would: results hashed and
capabilities signed before and after a restart (or an upgrade) must agree."""

import json

from hypothesis import given
from hypothesis import strategies as st

from lifecycle._canonical import ascii_json, ascii_scalar, canonical_json, handle_json, scalar
from lifecycle._capability import _message
from lifecycle._contract import (
    CONTRACT_VERSION,
    SubagentHandle,
    SubagentState,
    SubagentUsage,
    compute_result_hash,
    make_terminal_result_json,
)

texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)  # lone surrogates too
optional_texts = st.none() | texts
numbers = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70)
scalars = st.none() | st.booleans() | numbers | texts


@given(scalars)
def test_scalars_encode_as_the_json_encoders_do(value):
    assert scalar(value) == canonical_json(value)
    assert ascii_scalar(value) == ascii_json(value)


@given(st.lists(scalars, max_size=3) | st.dictionaries(texts, scalars, max_size=3))
def test_anything_else_falls_back_to_the_encoders(value):
    assert scalar(value) == canonical_json(value)
    assert ascii_scalar(value) == ascii_json(value)


handles = st.builds(
    SubagentHandle, contract_version=st.just(CONTRACT_VERSION), subagent_id=texts, parent_session_id=optional_texts,
    correlation_id=optional_texts, created_at=st.floats(allow_nan=False, allow_infinity=False) | st.integers(0, 2**40),
    provider=optional_texts, model=optional_texts, role=texts, depth=st.integers(0, 5), capability=texts,
)


@given(handles)
def test_a_handle_encodes_as_its_canonical_json(handle):
    assert handle_json(handle) == canonical_json(handle.to_dict())


@given(handles)
def test_the_signed_message_is_the_ascii_json_of_the_identity(handle):
    h = handle
    expected = ascii_json(["switchboard.subagent-handle", "v1", CONTRACT_VERSION, h.subagent_id, h.parent_session_id,
                           h.correlation_id, float(h.created_at), h.role, h.depth, h.provider, h.model]).encode("ascii")
    assert _message(h.subagent_id, h.parent_session_id, h.correlation_id, h.created_at, h.role, h.depth,
                    h.provider, h.model) == expected


@given(
    handles,
    st.sampled_from([SubagentState.SUCCEEDED, SubagentState.FAILED, SubagentState.CANCELLED]),
    optional_texts, optional_texts, optional_texts,
    st.builds(SubagentUsage, st.integers(0, 10**6), st.integers(0, 10**9), st.integers(0, 10**9),
              st.none() | st.floats(allow_nan=False, allow_infinity=False, min_value=0)),
    st.none() | st.floats(allow_nan=False, allow_infinity=False),
    st.none() | st.floats(allow_nan=False, allow_infinity=False),
)
def test_a_results_journal_text_is_the_canonical_json_it_was_hashed_over(
    handle, state, summary, error, reason, usage, started, completed
):
    result, text = make_terminal_result_json(
        handle, state, summary=summary, error_message=error, error_classification=reason, exit_reason=reason,
        usage=usage, started_at=started, completed_at=completed,
    )
    body = json.loads(text)
    assert body.pop("result_hash") == result.result_hash == compute_result_hash(result)
    assert text.startswith(canonical_json(body)[:-1])
    assert make_terminal_result_json(
        handle, state, summary=summary, error_message=error, error_classification=reason, exit_reason=reason,
        usage=usage, started_at=started, completed_at=completed, handle_json=handle_json(handle),
    ) == (result, text)
