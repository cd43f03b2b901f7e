"""The public subagent lifecycle contract: frozen value types, limits, validation. No I/O.

Everything here is safe to hand to plugins and to store: handles and results
round-trip through plain JSON (``to_dict``/``from_dict``) so they survive a
restart in the journal. This module imports nothing from ``gateway/``,
``platforms/`` or any SDK.

Errors::

    SubagentLifecycleError (ValueError)   every rejection; ``.code`` says which
    └── JournalError                      lifecycle._journal: records could not be stored
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from json.encoder import encode_basestring
from types import MappingProxyType, SimpleNamespace
from typing import Any

from agent._frozen import fast_init
from lifecycle._canonical import canonical_json, float_json, scalar
from lifecycle._canonical import handle_json as encoded_handle

CONTRACT_VERSION = 1
MAX_GOAL_CHARS = 16_000
MAX_CONTEXT_CHARS = 32_000
MAX_METADATA_BYTES = 8_192
MAX_METADATA_DEPTH = 100
"""Lists and mappings within each other, the metadata itself the first."""
MAX_RESULT_CHARS = 32_000
MAX_CORRELATION_ID_CHARS = 256
MAX_ALLOWED_TOOLSETS = 256
"""Names in ``allowed_toolsets``: far more than there are toolsets, few enough that checking them costs nothing
(a million held the event loop for seconds, sorted only to be refused)."""

# Diagnostics and error classifications the service reports instead of raising.
UNKNOWN_HANDLE = "UNKNOWN_HANDLE"
NOT_READY = "NOT_READY"
RECONNECT_UNAVAILABLE = "RECONNECT_UNAVAILABLE"

_ROLES = ("leaf", "orchestrator")
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class SubagentLifecycleError(ValueError):
    """Every rejection by the lifecycle API; ``code`` is machine-readable (e.g. ``INVALID_REQUEST``)."""

    def __init__(self, message: str, *, code: str = "INVALID_REQUEST"):
        super().__init__(message)
        self.code = code


class SubagentState(str, Enum):
    """Where a child is. The four terminal states are final: a record never leaves them."""

    PENDING = "PENDING"
    STARTING = "STARTING"  # taken by the engine, building the child (`EngineHost.starting`)
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    INTERRUPTED = "INTERRUPTED"
    CANCEL_REQUESTED = "CANCEL_REQUESTED"
    CANCELLED = "CANCELLED"
    UNKNOWN = "UNKNOWN"

    @property
    def terminal(self) -> bool:
        # By value: an enum member's own hash is computed in Python, a str's is cached.
        return self._value_ in _TERMINAL_VALUES


STATES = SimpleNamespace(**SubagentState.__members__)
"""The states as plain attributes (``STATES.RUNNING``) for hot paths: on Python 3.11 every
``SubagentState.RUNNING`` goes through ``EnumType.__getattr__``, three times the cost of an
attribute, and a child's life reads a state about ten times."""

TERMINAL_STATES = frozenset(
    {SubagentState.SUCCEEDED, SubagentState.FAILED, SubagentState.INTERRUPTED, SubagentState.CANCELLED}
)
_TERMINAL_VALUES = frozenset(s._value_ for s in TERMINAL_STATES)


@fast_init
@dataclass(frozen=True, slots=True)
class SubagentLaunchRequest:
    """What a caller asks for. Construction never fails; `validate_request` decides."""

    goal: str
    """The child's task, at most 16 000 characters, not blank."""
    context: str | None = None
    """Extra background for the child, at most 32 000 characters."""
    role: str = "leaf"
    """``leaf`` or ``orchestrator`` (may itself delegate, within the depth limit)."""
    model: str | None = None
    """Rejected when set: children run on ``delegation.model`` (or the parent's model)."""
    allowed_toolsets: tuple[str, ...] | None = None
    """Narrows the parent's toolsets; None or empty inherits them. Never broadens. At most 256 names."""
    blocked_tools: tuple[str, ...] = ()
    """Rejected when non-empty: unsafe child tools are always blocked anyway."""
    working_directory: str | None = None
    """Rejected when set: children use the parent's workspace."""
    parent_session_id: str | None = None
    """When set, must match the active parent session."""
    correlation_id: str | None = None
    """Caller's idempotency key, 1 to 256 characters: a second launch with it under the same parent session is
    refused (``Duplicate correlation_id for this parent session.``) until the first child's record is swept."""
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """JSON-serialisable, at most 8 192 bytes as sorted JSON with non-ASCII escaped. Callers must not mutate it
    after launch."""
    timeout_seconds: float | None = None
    """Rejected when set: the timeout is ``delegation.child_timeout_seconds``."""


def _invalid(message: str) -> SubagentLifecycleError:
    return SubagentLifecycleError(message, code="INVALID_REQUEST")


def validate_request(req: SubagentLaunchRequest) -> None:
    """Raise `SubagentLifecycleError` for the first problem found, in a fixed order; pure.

    Checks needing the parent (toolset existence, broadening, session match,
    duplicate correlation ids) belong to the service.
    """
    if not isinstance(req, SubagentLaunchRequest):
        raise _invalid(f"request must be a SubagentLaunchRequest, not {type(req).__name__}.")
    goal = req.goal
    if not isinstance(goal, str) or not goal.strip() or len(goal) > MAX_GOAL_CHARS:
        raise _invalid(f"goal must be a non-empty string of at most {MAX_GOAL_CHARS} characters.")
    if req.context is not None and (not isinstance(req.context, str) or len(req.context) > MAX_CONTEXT_CHARS):
        raise _invalid(f"context must be a string of at most {MAX_CONTEXT_CHARS} characters.")
    if not isinstance(req.role, str) or req.role not in _ROLES:
        raise _invalid("role must be 'leaf' or 'orchestrator'.")
    if req.timeout_seconds is not None:
        raise _invalid("Per-launch timeout is not supported; configure delegation.child_timeout_seconds instead.")
    if req.working_directory is not None:
        raise _invalid("working_directory is not supported; children use the parent's workspace.")
    if req.blocked_tools:
        raise _invalid("Per-tool blocking is not supported; use allowed_toolsets. Unsafe child tools are always blocked.")
    metadata = req.metadata
    if metadata is not _EMPTY:  # the default: nothing to check
        if not isinstance(metadata, Mapping):
            raise _invalid("metadata must be a mapping.")
        _check_json_shape(metadata)
        try:
            # allow_nan=False: NaN/Infinity are not JSON, whatever the json module's default says.
            encoded = json.dumps(dict(metadata), sort_keys=True, allow_nan=False) if metadata else "{}"
        except (TypeError, ValueError, RecursionError):
            raise _invalid("metadata must be JSON-serializable.") from None
        if len(encoded) > MAX_METADATA_BYTES:  # ensure_ascii output: characters == UTF-8 bytes
            raise _invalid(f"metadata exceeds {MAX_METADATA_BYTES} bytes.")
    cid = req.correlation_id
    if cid is not None and not (isinstance(cid, str) and 0 < len(cid) <= MAX_CORRELATION_ID_CHARS):
        raise _invalid(f"correlation_id must be a non-empty string of at most {MAX_CORRELATION_ID_CHARS} characters.")
    names = req.allowed_toolsets
    if isinstance(names, tuple | list) and len(names) > MAX_ALLOWED_TOOLSETS:  # before a name is read, or sorted
        raise _invalid(f"allowed_toolsets lists {len(names)} names; at most {MAX_ALLOWED_TOOLSETS} are allowed.")
    if names is not None and not (isinstance(names, tuple | list) and all(isinstance(n, str) and n for n in names)):
        raise _invalid("allowed_toolsets must be a list of toolset names.")
    if req.model is not None and not isinstance(req.model, str):
        raise _invalid("model must be a string or None.")
    if req.parent_session_id is not None and not isinstance(req.parent_session_id, str):
        raise _invalid("parent_session_id must be a string or None.")


def grace_seconds(grace: object) -> float | None:
    """``close``'s ``grace`` as the engines take it: None (the engine's default) as is, a number of seconds
    as a float, one beyond any float (``10**400``) as infinity; anything else (a string, a bool, NaN) raises
    `SubagentLifecycleError`. Checked before the close begins: a grace an engine chokes on halfway would leave
    the children stopped and the journal open, and the close, idempotent, would raise the same again."""
    if grace is None:
        return None
    if not isinstance(grace, int | float) or isinstance(grace, bool) or grace != grace:  # NaN
        raise _invalid("grace must be a number of seconds or None.")
    return math.inf if grace > sys.float_info.max else float(grace)


def _check_json_shape(metadata: Mapping[str, Any]) -> None:
    """Refuse what JSON would change: an in-process child gets the metadata as given, a child on
    Temporal as JSON made it (a key 1 as '1', a tuple as a list), and the two must read the same.

    In work bounded by the size limit, not by the metadata: what it has read so far would take at least
    ``size`` bytes of JSON, and past the limit it is refused at once (a list of ten million ids held the
    event loop for 7 s, walked whole, then encoded whole, only to be refused). A loop is not JSON; nesting
    deeper than `MAX_METADATA_DEPTH` is refused before `json.dumps` runs out of recursion, which happens at a
    depth that depends on how deep in the stack the launch is made (walked with a list, not recursion)."""
    size = 1  # the metadata's first byte: every value is counted so, as its container's item, before it is read
    inside: set[int] = set()  # the containers on the way to the item at hand: meeting one of them again is a loop
    pending: list[tuple[Any, Any, Any, int]] = [(None, "metadata", metadata, 1)]  # (parent path, key, value, depth)
    while pending:
        parent, key, value, depth = pending.pop()
        if depth == 0:  # the marker left when a container was entered: its items are done
            inside.discard(id(value))
            continue
        if isinstance(value, str):
            size += len(value) + 1  # quoted; an escaped character takes more
        elif isinstance(value, Mapping | list):
            if id(value) in inside:
                raise _invalid("metadata must be JSON-serializable.")
            if depth > MAX_METADATA_DEPTH:
                raise _invalid(f"metadata nests deeper than {MAX_METADATA_DEPTH} levels.")
            inside.add(id(value))
            pending.append((None, None, value, 0))  # the container, not its id: kept alive, its id not reused
            path = (parent, key)
            size += 1  # its brackets
            if isinstance(value, list):
                for index, item in enumerate(value):
                    size += 3 if index else 1  # ", " before all but the first, which takes a byte at least
                    if size > MAX_METADATA_BYTES:
                        raise _invalid(f"metadata exceeds {MAX_METADATA_BYTES} bytes.")
                    pending.append((path, index, item, depth + 1))
                continue
            for index, (name, item) in enumerate(value.items()):
                if not isinstance(name, str):
                    raise _invalid(f"{_path(path)} has a key {name!r} of type {type(name).__name__}: metadata keys"
                                   " must be strings (a child on Temporal gets its metadata through JSON, which makes"
                                   " every key one).")
                size += len(name) + (7 if index else 5)  # '"name": ' and its value's first byte, ", " before it
                if size > MAX_METADATA_BYTES:
                    raise _invalid(f"metadata exceeds {MAX_METADATA_BYTES} bytes.")
                pending.append((path, name, item, depth + 1))
            # After its items: one too big is refused for its size, read no further. The metadata itself is made a dict.
            if depth > 1 and not isinstance(value, dict):
                raise _invalid(f"{_path(path)} is of type {type(value).__name__}, which JSON cannot carry: use a dict.")
            continue
        elif isinstance(value, tuple):
            raise _invalid(f"{_path((parent, key))} is a tuple: use a list (a child on Temporal gets its metadata"
                           " through JSON, which makes it one).")
        elif isinstance(value, float) and not math.isfinite(value):
            raise _invalid(f"{_path((parent, key))} is {float.__repr__(value)}, which JSON cannot carry: use a finite"
                           " number.")
        elif isinstance(value, int) and value.bit_length() > 64:
            # Counted as the digits it has at least, not as one byte: a list of long integers is refused for its size
            # before any is made text (each conversion costs time quadratic in its digits).
            bits = value.bit_length()
            limit = sys.get_int_max_str_digits()
            if limit and bits * 30103 // 100000 + 1 > limit:  # may have more digits than Python makes text of
                try:
                    int.__repr__(value)
                except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
                    raise _invalid(f"{_path((parent, key))} is an integer of more than {limit} digits, which JSON"
                                   " cannot carry (Python's limit for integers as text): use a string.") from None
            size += (bits - 1) * 30102 // 100000  # digits past the first, at least (30102: under log10(2))
        elif value is not None and not isinstance(value, int | float):
            # Named, with where it is: "not JSON-serializable" alone left a plugin to search its metadata for the
            # datetime or the set among its values.
            raise _invalid(f"{_path((parent, key))} is of type {type(value).__name__}, which JSON cannot carry: use a"
                           " string, number, boolean, None, list or dict.")
        # Anything else was counted as its container's item.
        if size > MAX_METADATA_BYTES:
            raise _invalid(f"metadata exceeds {MAX_METADATA_BYTES} bytes.")


def plain_metadata(value: Any) -> Any:
    """A copy of metadata `validate_request` passed, in JSON's own containers (dicts, lists), taken at launch. The
    child reads its metadata when it starts, maybe long after (queued behind ``max_running``): a plugin that went on
    filling a list it had launched with (one list for a batch, grown a file a launch) gave every queued child the
    whole batch's, where a child on Temporal, its job sent as JSON as it is launched, read its own. Walks no deeper than
    `MAX_METADATA_DEPTH`, nor past `MAX_METADATA_BYTES`: checked first. Its strings and numbers too, as JSON makes
    them: an enum's member or a str subclass (a key too) reached an in-process child as itself (``str()`` of a
    ``(str, Enum)`` member is ``Color.RED``), a child on Temporal as the plain value (``red``)."""
    if isinstance(value, Mapping):
        return {name if type(name) is str else str.__str__(name): plain_metadata(item) for name, item in value.items()}
    if isinstance(value, list):
        return [plain_metadata(item) for item in value]
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    return int.__int__(value) if isinstance(value, int) else float.__float__(value)  # what `_check_json_shape` let by


def _path(path: tuple[Any, Any]) -> str:
    """``metadata['opts'][0]`` for the path `_check_json_shape` keeps, made only for an error."""
    keys = []
    while path[0] is not None:
        path, key = path
        keys.append(f"[{key!r}]" if isinstance(key, str) else f"[{key}]")
    return "metadata" + "".join(reversed(keys))


@fast_init
@dataclass(frozen=True, slots=True)
class SubagentHandle:
    """What the parent holds. Usable only while `capability` verifies against the key ring.

    A handle of another ``contract_version`` parses (so old stored handles load)
    but never verifies: operations on it report UNKNOWN instead of raising.
    """

    contract_version: int
    """`CONTRACT_VERSION` of the service that issued the handle."""
    subagent_id: str
    """Stable child id; the journal key."""
    parent_session_id: str | None
    """The session that launched the child; the handle works only inside it."""
    correlation_id: str | None
    """The launch request's correlation id."""
    created_at: float
    """Wall-clock launch time (epoch seconds)."""
    provider: str | None
    """Provider the child runs on."""
    model: str | None
    """Model the child runs on."""
    role: str
    """Effective role after any downgrade (an orchestrator at the depth floor becomes a leaf)."""
    depth: int
    """Nesting depth; a child of a top-level session has depth 1."""
    capability: str
    """Opaque token ``v1.<kid>.<hmac>`` binding the fields above; treat as a secret."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe plain dict; `from_dict` of it gives an equal handle."""
        return {name: getattr(self, name) for name in _HANDLE_KEYS}

    @classmethod
    def from_dict(cls, mapping: Any) -> SubagentHandle:
        """Parse strictly: exact keys and exact types, else ``Malformed subagent handle.``."""
        try:
            if isinstance(mapping, Mapping) and len(mapping) == len(_HANDLE_KEYS) and set(mapping) == _HANDLE_SET:
                values = [mapping[name] for name in _HANDLE_KEYS]
                created = values[_CREATED_AT]
                if type(created) is int and abs(created) < 2**53:  # larger ints would not convert exactly
                    values[_CREATED_AT] = float(created)
                handle = cls(*values)
                if is_well_formed_handle(handle):
                    return handle
        except Exception:  # a hostile Mapping may raise anything; all of it means "malformed"
            pass
        raise SubagentLifecycleError("Malformed subagent handle.", code="MALFORMED_HANDLE")


_HANDLE_KEYS = tuple(f.name for f in dataclasses.fields(SubagentHandle))
_HANDLE_SET = frozenset(_HANDLE_KEYS)
_CREATED_AT = _HANDLE_KEYS.index("created_at")


def _opt_str(value: object) -> bool:
    return value is None or type(value) is str


def _finite_number(value: object) -> bool:
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is int:  # exact types: bool is an int subclass and must not pass
        return abs(value) < 2**53  # larger ints would not survive the float conversion exactly
    return False


def is_well_formed_handle(handle: object) -> bool:
    """Whether every field has its due type (exact types, so bools and str subclasses fail). Never raises.

    The handle itself must be exactly a `SubagentHandle`, not a subclass: a subclass may override a field
    with a property that answers one value while the capability is checked and another when the child is
    looked up, and an ``__eq__`` that the service's last comparison would call first, so that a plugin's
    own, verifying handle reached another session's child."""
    return (
        type(handle) is SubagentHandle
        and type(handle.contract_version) is int
        and type(handle.subagent_id) is str
        and handle.subagent_id != ""
        and _opt_str(handle.parent_session_id)
        and _opt_str(handle.correlation_id)
        and _finite_number(handle.created_at)
        and _opt_str(handle.provider)
        and _opt_str(handle.model)
        and type(handle.role) is str
        and type(handle.depth) is int
        and handle.depth >= 0
        and type(handle.capability) is str
    )


@fast_init
@dataclass(frozen=True, slots=True)
class SubagentStatus:
    """A point-in-time view; UNKNOWN with diagnostic ``UNKNOWN_HANDLE`` for a handle that does not verify."""

    handle: SubagentHandle
    state: SubagentState
    updated_at: float
    """When the state last changed (epoch seconds)."""
    diagnostic: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class SubagentTerminalState:
    """What ``wait`` returns. ``completed`` is False only when the wait itself timed out."""

    handle: SubagentHandle
    state: SubagentState
    completed: bool
    """True once the child reached a terminal state (or the handle is unknown: nothing to wait for)."""
    timed_out: bool = False
    """The wait's own timeout elapsed; the child keeps running."""
    diagnostic: str | None = None


@dataclass(frozen=True, slots=True)
class SubagentCancelResult:
    """Outcome of ``cancel``. Cancelling is idempotent; a finished child is never changed."""

    accepted: bool
    """The interrupt was delivered; the child stops at its next safe boundary."""
    state: SubagentState
    """The state after the call (CANCEL_REQUESTED when accepted); the state it ended in when ``already_terminal``."""
    already_terminal: bool = False
    """It had finished, or was finishing (its end known, its result not yet published): nothing changed."""
    unknown_handle: bool = False
    message: str = ""


@fast_init
@dataclass(frozen=True, slots=True)
class SubagentUsage:
    """Resources a child consumed."""

    api_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    """None when the provider reports no price."""


@fast_init
@dataclass(frozen=True, slots=True)
class SubagentResult:
    """A child's outcome. Once ``ready``, the result is final: every later read returns an equal object.

    Text is bounded to `MAX_RESULT_CHARS`, keeping the head (and a summary's closing note that the answer was
    not whole, `INCOMPLETE_NOTES`); truncation is always flagged with the original length. Transcripts and
    hidden reasoning are never included.
    """

    handle: SubagentHandle
    state: SubagentState
    ready: bool
    """True when the child is terminal and this is its final result."""
    summary: str | None = None
    """The child's final answer."""
    summary_truncated: bool = False
    summary_original_length: int | None = None
    """Length before truncation; None when nothing was cut."""
    error_message: str | None = None
    error_truncated: bool = False
    error_original_length: int | None = None
    error_classification: str | None = None
    """Machine-readable failure kind (e.g. ``TIMEOUT``, ``UNKNOWN_HANDLE``, ``NOT_READY``); None on success."""
    exit_reason: str | None = None
    """Why the child's loop stopped (e.g. ``completed``, ``max_iterations``)."""
    usage: SubagentUsage = SubagentUsage()
    started_at: float | None = None
    completed_at: float | None = None
    duration_seconds: float | None = None
    result_hash: str | None = None
    """SHA-256 hex of the canonical JSON of `to_dict` without this key; see `compute_result_hash`."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe plain dict; `from_dict` of it gives an equal result."""
        body: dict[str, Any] = {name: getattr(self, name) for name in _RESULT_PLAIN}
        body["handle"] = self.handle.to_dict()
        body["state"] = self.state.value
        body["usage"] = {name: getattr(self.usage, name) for name in _USAGE_KEYS}
        return body

    @classmethod
    def from_dict(cls, mapping: Any) -> SubagentResult:
        """Parse strictly (exact keys, due types), else ``Malformed subagent result.``."""
        try:
            if isinstance(mapping, Mapping) and set(mapping) == _RESULT_SET:
                usage = mapping["usage"]
                if isinstance(usage, Mapping) and set(usage) == _USAGE_SET:
                    fields = {name: mapping[name] for name in _RESULT_PLAIN}
                    result = cls(
                        handle=SubagentHandle.from_dict(mapping["handle"]),
                        state=SubagentState(mapping["state"]),
                        usage=SubagentUsage(**usage),
                        **fields,
                    )
                    if _well_typed(result):
                        return result
        except Exception:  # anything odd in stored data means "malformed", never a crash
            pass
        raise SubagentLifecycleError("Malformed subagent result.", code="MALFORMED_RESULT")


_USAGE_KEYS = tuple(f.name for f in dataclasses.fields(SubagentUsage))
_USAGE_SET = frozenset(_USAGE_KEYS)
_RESULT_PLAIN = tuple(f.name for f in dataclasses.fields(SubagentResult) if f.name not in ("handle", "state", "usage"))
_RESULT_SET = frozenset(f.name for f in dataclasses.fields(SubagentResult))


def _opt(kind: type, value: object) -> bool:
    return value is None or type(value) is kind or (kind is float and type(value) is int)


def _well_typed(r: SubagentResult) -> bool:
    u = r.usage
    return (
        all(type(v) is bool for v in (r.ready, r.summary_truncated, r.error_truncated))
        and all(_opt(str, v) for v in (r.summary, r.error_message, r.error_classification, r.exit_reason, r.result_hash))
        and all(_opt(int, v) for v in (r.summary_original_length, r.error_original_length))
        and all(_opt(float, v) for v in (r.started_at, r.completed_at, r.duration_seconds, u.cost_usd))
        and all(type(v) is int for v in (u.api_calls, u.prompt_tokens, u.completion_tokens))
    )


@dataclass(frozen=True, slots=True)
class SubagentReconnectResult:
    """Outcome of ``reconnect``: a pure lookup that never starts a replacement child."""

    connected: bool
    state: SubagentState
    diagnostic: str | None = None
    """``RECONNECT_UNAVAILABLE`` when the handle does not verify or its record is gone."""


def compute_result_hash(result: SubagentResult) -> str:
    """SHA-256 hex of ``to_dict()`` minus ``result_hash`` as canonical JSON; equal content, equal hash."""
    body = result.to_dict()
    del body["result_hash"]
    return _digest(canonical_json(body))


def _digest(canonical: str) -> str:
    # surrogatepass: a lone surrogate in model output must hash, not crash.
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


INCOMPLETE_NOTES = {
    "output_limit": "[The answer was cut off here: the subagent's model reached its limit on output length.]",
    "content_filter": "[The rest of this answer was withheld by the model provider's content filter.]",
}
"""What a completed child's summary ends with when its answer is not whole (`lifecycle._job.ChildOutcome`'s
``incomplete``, `lifecycle._child_run`): kept by `_bound` past the head it keeps, since the longest answers are the ones most often
cut off, and without it the parent took half an answer for the whole one."""


def _bound(text: object) -> tuple[str | None, bool, int | None]:
    if text is None:
        return _UNBOUNDED
    text = text if type(text) is str else str(text)
    if len(text) <= MAX_RESULT_CHARS:
        return text, False, None
    note = next((f"\n\n{n}" for n in INCOMPLETE_NOTES.values() if text.endswith(n)), "")
    return text[:MAX_RESULT_CHARS - len(note)] + note, True, len(text)


_UNBOUNDED = (None, False, None)


def make_terminal_result(*args: Any, **kwargs: Any) -> SubagentResult:
    """The final, hashed result of a terminal child; see `make_terminal_result_json`."""
    return make_terminal_result_json(*args, **kwargs)[0]


def make_terminal_result_json(
    handle: SubagentHandle,
    state: SubagentState,
    *,
    summary: str | None = None,
    error_message: str | None = None,
    error_classification: str | None = None,
    exit_reason: str | None = None,
    usage: SubagentUsage | None = None,
    started_at: float | None = None,
    completed_at: float | None = None,
    duration_seconds: float | None = None,
    handle_json: str | None = None,
) -> tuple[SubagentResult, str]:
    """Build the final, hashed result of a terminal child (``ready=True``), and its
    ``to_dict()`` as JSON text for the journal: the canonical JSON the hash was taken over,
    with ``result_hash`` appended. ``handle_json``, when given, must be `canonical_json` of
    ``handle.to_dict()``: it is used as is instead of encoding the handle again.

    Non-str text is converted with ``str()``; text over `MAX_RESULT_CHARS` keeps
    its head and sets the ``*_truncated`` flag and ``*_original_length``. Times
    are stored as floats so the hash is the same after a JSON round trip.
    ``duration_seconds`` defaults to ``completed_at - started_at`` when both are
    known. Raises ValueError for a non-terminal state (a programming error).
    """
    return result_and_text(
        handle, state, summary, error_message, error_classification, exit_reason, usage, started_at,
        completed_at, duration_seconds, handle_json,
    )


def result_and_text(
    handle: SubagentHandle, state: SubagentState, summary: str | None, error_message: str | None,
    error_classification: str | None, exit_reason: str | None, usage: SubagentUsage | None,
    started_at: float | None, completed_at: float | None, duration_seconds: float | None, handle_json: str | None,
) -> tuple[SubagentResult, str]:
    """`make_terminal_result_json` with positional arguments (it runs for every child)."""
    if type(state) is not SubagentState:
        state = SubagentState(state)
    if state._value_ not in _TERMINAL_VALUES:
        raise ValueError(f"{state.value} is not a terminal state.")
    # Text is bounded (and made a str) by `_bound`, called only when there is something to do: nearly never.
    if summary is not None and (type(summary) is not str or len(summary) > MAX_RESULT_CHARS):
        summary, summary_truncated, summary_length = _bound(summary)
    else:
        summary_truncated, summary_length = False, None
    error_message, error_truncated, error_length = _bound(error_message) if error_message is not None else _UNBOUNDED
    if duration_seconds is None and started_at is not None and completed_at is not None:
        duration_seconds = max(0.0, completed_at - started_at)
    usage = usage if usage is not None else SubagentUsage()
    started = None if started_at is None else float(started_at)
    completed = None if completed_at is None else float(completed_at)
    duration = None if duration_seconds is None else float(duration_seconds)
    # Written once, for the hash and the journal alike, in sorted key order: this runs for every
    # child. Absent values, flags, the times and the (bounded, so str) texts are written inline; `scalar`
    # writes the rest.
    # ``body`` is the document without its closing brace: the hash is taken over body + "}",
    # the journal's text is body + the hash + "}" (no copy of the document without its end).
    j, f, e = scalar, float_json, encode_basestring
    cost, calls, completion, prompt = usage.cost_usd, usage.api_calls, usage.completion_tokens, usage.prompt_tokens
    body = (
        f'{{"completed_at":{"null" if completed is None else f(completed)},'
        f'"duration_seconds":{"null" if duration is None else f(duration)},'
        f'"error_classification":{"null" if error_classification is None else j(error_classification)},'
        f'"error_message":{"null" if error_message is None else e(error_message)},'
        f'"error_original_length":{"null" if error_length is None else j(error_length)},'
        f'"error_truncated":{"true" if error_truncated else "false"},'
        f'"exit_reason":'
        f'{"null" if exit_reason is None else e(exit_reason) if type(exit_reason) is str else j(exit_reason)},'
        f'"handle":{encoded_handle(handle) if handle_json is None else handle_json},'
        f'"ready":true,"started_at":{"null" if started is None else f(started)},'
        f'"state":"{state._value_}",'  # the states are plain ASCII names
        f'"summary":{"null" if summary is None else e(summary)},'
        f'"summary_original_length":{"null" if summary_length is None else j(summary_length)},'
        f'"summary_truncated":{"true" if summary_truncated else "false"},'
        f'"usage":{{"api_calls":{calls if type(calls) is int else j(calls)},'  # an exact int formats as its JSON
        f'"completion_tokens":{completion if type(completion) is int else j(completion)},'
        f'"cost_usd":{"null" if cost is None else j(cost)},'
        f'"prompt_tokens":{prompt if type(prompt) is int else j(prompt)}}}'
    )
    sha = hashlib.sha256(body.encode("utf-8", "surrogatepass"))  # as `_digest` encodes
    sha.update(b"}")
    digest = sha.hexdigest()
    result = SubagentResult._build(
        handle, state, True, summary, summary_truncated, summary_length, error_message, error_truncated,
        error_length, error_classification, exit_reason, usage, started, completed, duration, digest,
    )
    return result, f'{body},"result_hash":"{digest}"}}'
