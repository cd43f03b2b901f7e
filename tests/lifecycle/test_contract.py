"""The public lifecycle contract: validation order and messages, handle and result round trips."""

from __future__ import annotations

import dataclasses
import json
import math
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lifecycle._contract import (
    CONTRACT_VERSION,
    MAX_RESULT_CHARS,
    TERMINAL_STATES,
    SubagentHandle,
    SubagentLaunchRequest,
    SubagentLifecycleError,
    SubagentResult,
    SubagentState,
    SubagentUsage,
    canonical_json,
    compute_result_hash,
    is_well_formed_handle,
    make_terminal_result,
    make_terminal_result_json,
    validate_request,
)

GOAL_MSG = "goal must be a non-empty string of at most 16000 characters."
CONTEXT_MSG = "context must be a string of at most 32000 characters."
ROLE_MSG = "role must be 'leaf' or 'orchestrator'."
TIMEOUT_MSG = "Per-launch timeout is not supported; configure delegation.child_timeout_seconds instead."
WORKDIR_MSG = "working_directory is not supported; children use the parent's workspace."
BLOCKED_MSG = "Per-tool blocking is not supported; use allowed_toolsets. Unsafe child tools are always blocked."
META_JSON_MSG = "metadata must be JSON-serializable."
NOT_JSON = "which JSON cannot carry: use a string, number, boolean, None, list or dict."
META_OBJECT_MSG = f"metadata['x'] is of type object, {NOT_JSON}"
META_SIZE_MSG = "metadata exceeds 8192 bytes."
CORRELATION_MSG = "correlation_id must be a non-empty string of at most 256 characters."
TOOLSETS_MSG = "allowed_toolsets must be a list of toolset names."


def rejection(req: object) -> str:
    with pytest.raises(SubagentLifecycleError) as info:
        validate_request(req)  # type: ignore[arg-type]
    assert info.value.code == "INVALID_REQUEST"
    return str(info.value)


def handle(**changes: object) -> SubagentHandle:
    base = SubagentHandle(CONTRACT_VERSION, "sa-1", "session-1", "corr-1", 1_700_000_000.25, "openai", "gpt", "leaf", 1, "v1.k.x")
    return dataclasses.replace(base, **changes)


# --- validate_request -------------------------------------------------------------------


def test_a_valid_request_passes() -> None:
    validate_request(SubagentLaunchRequest("Summarise the report", metadata={"k": [1, "two", None]}))


def test_checks_run_in_order_and_report_the_first_failure() -> None:
    # Every field is wrong; fixing them one at a time walks through the messages in order.
    bad = {
        "goal": "   ",
        "context": 7,
        "role": "Leaf",
        "timeout_seconds": 30.0,
        "working_directory": "/tmp",
        "blocked_tools": ("terminal",),
        "metadata": {"x": object()},
        "correlation_id": "",
        "allowed_toolsets": "web",
    }
    fixed = {
        "goal": "do it",
        "context": None,
        "role": "leaf",
        "timeout_seconds": None,
        "working_directory": None,
        "blocked_tools": (),
        "metadata": {},
        "correlation_id": None,
        "allowed_toolsets": None,
    }
    messages = [GOAL_MSG, CONTEXT_MSG, ROLE_MSG, TIMEOUT_MSG, WORKDIR_MSG, BLOCKED_MSG, META_OBJECT_MSG,
                CORRELATION_MSG, TOOLSETS_MSG]
    fields = dict(bad)
    for name, message in zip(bad, messages, strict=True):
        assert rejection(SubagentLaunchRequest(**fields)) == message  # type: ignore[arg-type]
        fields[name] = fixed[name]
    validate_request(SubagentLaunchRequest(**fields))  # type: ignore[arg-type]


@pytest.mark.parametrize("goal", ["", "  \n\t", None, 42, "x" * 16_001])
def test_goal_must_be_a_bounded_non_blank_string(goal: object) -> None:
    assert rejection(SubagentLaunchRequest(goal)) == GOAL_MSG  # type: ignore[arg-type]


def test_not_a_request_at_all_is_named_as_such() -> None:
    # It read "goal must be a non-empty string…" even for a dict whose goal was fine.
    assert rejection({"goal": "x"}) == "request must be a SubagentLaunchRequest, not dict."
    assert rejection(None) == "request must be a SubagentLaunchRequest, not NoneType."


def test_limits_are_inclusive() -> None:
    validate_request(SubagentLaunchRequest("x" * 16_000, context="c" * 32_000, correlation_id="c" * 256))
    assert rejection(SubagentLaunchRequest("x", context="c" * 32_001)) == CONTEXT_MSG
    assert rejection(SubagentLaunchRequest("x", correlation_id="c" * 257)) == CORRELATION_MSG


@pytest.mark.parametrize("role", ["LEAF", "orchestrator ", "", None])
def test_role_is_an_exact_match(role: object) -> None:
    assert rejection(SubagentLaunchRequest("x", role=role)) == ROLE_MSG  # type: ignore[arg-type]


def test_orchestrator_role_is_accepted() -> None:
    validate_request(SubagentLaunchRequest("x", role="orchestrator"))


def test_metadata_size_is_measured_as_sorted_json() -> None:
    # '{"k": ""}' is 9 characters, so 8183 payload characters make exactly 8192 bytes.
    validate_request(SubagentLaunchRequest("x", metadata={"k": "v" * 8183}))
    assert rejection(SubagentLaunchRequest("x", metadata={"k": "v" * 8184})) == META_SIZE_MSG
    # Non-ASCII text counts as its JSON escape, 6 bytes per character here.
    assert rejection(SubagentLaunchRequest("x", metadata={"k": "é" * 1400})) == META_SIZE_MSG


@pytest.mark.parametrize(("metadata", "message"), [
    ({"x": float("nan")}, "metadata['x'] is nan, which JSON cannot carry: use a finite number."),
    ({"x": [1, float("-inf")]}, "metadata['x'][1] is -inf, which JSON cannot carry: use a finite number."),
    ({"x": {1, 2}}, f"metadata['x'] is of type set, {NOT_JSON}"),
    ({"x": {"y": b"bytes"}}, f"metadata['x']['y'] is of type bytes, {NOT_JSON}"),
    ({"x": MappingProxyType({})}, "metadata['x'] is of type mappingproxy, which JSON cannot carry: use a dict."),
])
def test_metadata_must_be_json_and_a_value_that_is_not_is_named(metadata: dict, message: str) -> None:
    # "metadata must be JSON-serializable." alone left a plugin to search its metadata for the datetime among it.
    assert rejection(SubagentLaunchRequest("x", metadata=metadata)) == message


def test_metadata_round_the_json_size_limit_in_items_is_refused_not_walked_for_ever() -> None:
    looped: dict = {}
    looped["again"] = looped
    assert rejection(SubagentLaunchRequest("x", metadata=looped)) == META_JSON_MSG
    assert rejection(SubagentLaunchRequest("x", metadata={"k": [0] * 9000})) == META_SIZE_MSG


KEY_MSG = ("has a key {} of type {}: metadata keys must be strings (a child on Temporal gets its metadata through"
           " JSON, which makes every key one).")


@pytest.mark.parametrize(("metadata", "where", "key"), [
    ({1: "a"}, "metadata", 1),
    ({1: "a", "b": 2}, "metadata", 1),
    ({"opts": {None: 2}}, "metadata['opts']", None),
    ({"a": [{"ok": 1}, {True: 1}]}, "metadata['a'][1]", True),
])
def test_metadata_keys_must_be_strings_as_a_child_on_temporal_gets_them(metadata: dict, where: str, key) -> None:
    # An in-process child read {1: 'a'}, a child on a worker {'1': 'a'}: one request, two children.
    message = rejection(SubagentLaunchRequest("x", metadata=metadata))
    assert message == f"{where} " + KEY_MSG.format(repr(key), type(key).__name__)


def test_metadata_tuples_are_refused_as_a_child_on_temporal_gets_a_list() -> None:
    assert rejection(SubagentLaunchRequest("x", metadata={"tags": ["a", ("b", "c")]})) == (
        "metadata['tags'][1] is a tuple: use a list (a child on Temporal gets its metadata through JSON, which makes"
        " it one).")


def test_metadata_must_be_a_mapping() -> None:
    assert rejection(SubagentLaunchRequest("x", metadata=["a"])) == "metadata must be a mapping."  # type: ignore[arg-type]


@pytest.mark.parametrize("toolsets", ["web", ("web", 3), ("",), {"web"}])
def test_allowed_toolsets_must_be_names(toolsets: object) -> None:
    assert rejection(SubagentLaunchRequest("x", allowed_toolsets=toolsets)) == TOOLSETS_MSG  # type: ignore[arg-type]


def test_allowed_toolsets_accepts_tuples_lists_and_empty() -> None:
    for toolsets in [("web", "files"), ["web"], ()]:
        validate_request(SubagentLaunchRequest("x", allowed_toolsets=toolsets))  # type: ignore[arg-type]


def test_the_error_is_a_value_error_with_a_code() -> None:
    error = SubagentLifecycleError("nope", code="NO_PARENT")
    assert isinstance(error, ValueError) and error.code == "NO_PARENT"


# --- states and value types -------------------------------------------------------------


def test_states_are_their_own_names_and_four_are_terminal() -> None:
    assert [s.value for s in SubagentState] == [s.name for s in SubagentState]
    assert len(SubagentState) == 9
    assert {s for s in SubagentState if s.terminal} == set(TERMINAL_STATES) == {
        SubagentState.SUCCEEDED,
        SubagentState.FAILED,
        SubagentState.INTERRUPTED,
        SubagentState.CANCELLED,
    }


def test_contract_types_are_frozen_and_slotted() -> None:
    h = handle()
    assert not hasattr(h, "__dict__") and not hasattr(SubagentLaunchRequest("x"), "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.depth = 3  # type: ignore[misc]


# --- handles ------------------------------------------------------------------------------


def test_handle_round_trips_through_json() -> None:
    h = handle()
    data = json.loads(json.dumps(h.to_dict()))
    assert SubagentHandle.from_dict(data) == h
    assert type(h.to_dict()) is dict


def test_integer_created_at_becomes_a_float() -> None:
    parsed = SubagentHandle.from_dict(dict(handle().to_dict(), created_at=5))
    assert parsed.created_at == 5.0 and type(parsed.created_at) is float


def test_a_handle_of_another_contract_version_parses() -> None:
    assert SubagentHandle.from_dict(dict(handle().to_dict(), contract_version=2)).contract_version == 2


MALFORMED = [
    ("contract_version", True),
    ("contract_version", "1"),
    ("contract_version", 1.0),
    ("subagent_id", ""),
    ("subagent_id", None),
    ("parent_session_id", 5),
    ("correlation_id", ["c"]),
    ("created_at", True),
    ("created_at", math.nan),
    ("created_at", math.inf),
    ("created_at", "1.0"),
    ("created_at", 10**400),
    ("provider", 1),
    ("model", b"m"),
    ("role", None),
    ("depth", -1),
    ("depth", 1.0),
    ("depth", False),
    ("capability", None),
]


@pytest.mark.parametrize(("key", "value"), MALFORMED)
def test_from_dict_rejects_wrong_types(key: str, value: object) -> None:
    with pytest.raises(SubagentLifecycleError, match="^Malformed subagent handle.$"):
        SubagentHandle.from_dict(dict(handle().to_dict(), **{key: value}))
    assert not is_well_formed_handle(handle(**{key: value}))


@pytest.mark.parametrize("data", [None, "handle", [], {}, {"extra": 1}])
def test_from_dict_rejects_wrong_shapes(data: object) -> None:
    with pytest.raises(SubagentLifecycleError) as info:
        SubagentHandle.from_dict(data)
    assert info.value.code == "MALFORMED_HANDLE"


def test_from_dict_rejects_missing_and_extra_keys() -> None:
    data = handle().to_dict()
    for bad in [{k: v for k, v in data.items() if k != "model"}, dict(data, surprise=None)]:
        with pytest.raises(SubagentLifecycleError):
            SubagentHandle.from_dict(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(handle().to_dict())) | st.text(max_size=5), json_values))
def test_from_dict_either_parses_a_well_formed_handle_or_raises_the_contract_error(data: dict) -> None:
    try:
        parsed = SubagentHandle.from_dict(data)
    except SubagentLifecycleError:
        return
    assert is_well_formed_handle(parsed)


# --- results ------------------------------------------------------------------------------


def test_result_round_trips_to_an_equal_object_with_the_same_hash() -> None:
    result = make_terminal_result(
        handle(),
        SubagentState.FAILED,
        summary="partial ✓",
        error_message="boom",
        error_classification="TIMEOUT",
        exit_reason="timeout",
        usage=SubagentUsage(api_calls=3, prompt_tokens=10, completion_tokens=5, cost_usd=0.1 + 0.2),
        started_at=0.1,
        completed_at=1_700_000_000.123456789,
    )
    back = SubagentResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result
    assert back.result_hash == result.result_hash == compute_result_hash(back)
    assert back.duration_seconds == result.completed_at - result.started_at  # type: ignore[operator]


def test_the_hash_is_stable_and_content_sensitive() -> None:
    first = make_terminal_result(handle(), SubagentState.SUCCEEDED, summary="done", completed_at=2.0)
    again = make_terminal_result(handle(), SubagentState.SUCCEEDED, summary="done", completed_at=2)
    other = make_terminal_result(handle(), SubagentState.SUCCEEDED, summary="done!", completed_at=2.0)
    assert first.result_hash == again.result_hash != other.result_hash
    assert len(first.result_hash or "") == 64


def test_long_text_is_truncated_loudly_keeping_the_head() -> None:
    summary = "a" * MAX_RESULT_CHARS + "TAIL"
    result = make_terminal_result(handle(), SubagentState.SUCCEEDED, summary=summary, error_message="e" * 40_000)
    assert result.summary == "a" * MAX_RESULT_CHARS
    assert result.summary_truncated and result.summary_original_length == MAX_RESULT_CHARS + 4
    assert result.error_truncated and result.error_original_length == 40_000
    assert len(result.error_message or "") == MAX_RESULT_CHARS


def test_text_at_the_limit_is_kept_whole() -> None:
    result = make_terminal_result(handle(), SubagentState.SUCCEEDED, summary="a" * MAX_RESULT_CHARS)
    assert not result.summary_truncated and result.summary_original_length is None
    assert result.ready and result.error_message is None


def test_a_lone_surrogate_hashes_and_round_trips() -> None:
    result = make_terminal_result(handle(), SubagentState.SUCCEEDED, summary="bad \ud800 text")
    assert SubagentResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


@pytest.mark.parametrize("state", [SubagentState.RUNNING, SubagentState.UNKNOWN, "PENDING"])
def test_only_terminal_states_make_terminal_results(state: SubagentState) -> None:
    with pytest.raises(ValueError, match="not a terminal state"):
        make_terminal_result(handle(), state)


@pytest.mark.parametrize(
    "change",
    [
        {"state": "DONE"},
        {"ready": 1},
        {"summary": 5},
        {"usage": {"api_calls": 1}},
        {"usage": {"api_calls": "1", "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None}},
        {"handle": {}},
        {"extra": True},
    ],
)
def test_malformed_stored_results_are_rejected(change: dict) -> None:
    data = dict(make_terminal_result(handle(), SubagentState.SUCCEEDED).to_dict(), **change)
    with pytest.raises(SubagentLifecycleError) as info:
        SubagentResult.from_dict(data)
    assert info.value.code == "MALFORMED_RESULT"


@settings(deadline=None, max_examples=50)
@given(
    summary=st.none() | st.text(),
    error=st.none() | st.text(),
    started=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    completed=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    cost=st.none() | st.floats(allow_nan=False),
)
def test_any_result_survives_json_exactly(
    summary: str | None, error: str | None, started: float | None, completed: float | None, cost: float | None
) -> None:
    result = make_terminal_result(
        handle(),
        SubagentState.CANCELLED,
        summary=summary,
        error_message=error,
        usage=SubagentUsage(cost_usd=cost),
        started_at=started,
        completed_at=completed,
    )
    back = SubagentResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result and compute_result_hash(back) == result.result_hash


_TEXT = st.text(max_size=40) | st.sampled_from(['","ready":true,"', '\\",\\"ready\\":', "lone \ud800 surrogate", "é"])


@settings(max_examples=200, deadline=None)
@given(summary=st.none() | _TEXT, error=st.none() | _TEXT, exit_reason=st.none() | _TEXT,
       correlation=st.none() | _TEXT.filter(bool), cost=st.none() | st.floats(allow_nan=False))
def test_embedding_the_stored_handle_text_gives_the_very_same_result_text(summary, error, exit_reason, correlation, cost):
    h = handle(correlation_id=correlation)
    kwargs = dict(summary=summary, error_message=error, exit_reason=exit_reason, started_at=1.5, completed_at=2.25,
                  usage=SubagentUsage(1, 2, 3, cost))
    plain = make_terminal_result_json(h, SubagentState.FAILED, **kwargs)
    embedded = make_terminal_result_json(h, SubagentState.FAILED, handle_json=canonical_json(h.to_dict()), **kwargs)
    assert embedded == plain
    result, text = plain
    assert SubagentResult.from_dict(json.loads(text)) == result and result.result_hash == compute_result_hash(result)
