"""Canonical JSON of the contract's documents, written directly.

`canonical_json` (sorted keys, no spaces, non-ASCII as is) is what `result_hash`
is taken over, and a capability signs the ASCII JSON of a handle's identity
fields. The encoders here produce exactly the bytes `json.JSONEncoder` would,
without building an encoder and sorting keys for every child (a fifth of the
lifecycle's own cost per child, measured); ``tests/lifecycle/test_canonical.py``
holds them to that.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

# One reusable encoder each: json.dumps(sort_keys=...) would build a new encoder for every call.
canonical_json = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
"""Sorted keys, no spaces, non-ASCII as is: the encoding `result_hash` is taken over."""
ascii_json = json.JSONEncoder(separators=(",", ":")).encode
"""No spaces, every non-ASCII character escaped (so the text always encodes as ASCII)."""

_INFINITY = float("inf")


def _scalar_writer(write_str: Callable[[str], str], write_any: Callable[[Any], str]) -> Callable[[Any], str]:
    def write(value: Any) -> str:
        kind = type(value)
        if kind is str:
            return write_str(value)
        if value is None:
            return "null"
        if kind is float:
            return float_json(value)
        if kind is int:
            return repr(value)  # what int.__repr__ gives an exact int, without an unbound-method call
        if kind is bool:
            return "true" if value else "false"
        return write_any(value)

    return write


scalar = _scalar_writer(encode_basestring, canonical_json)
"""`canonical_json` of one value; fast for str, None, bool, int and float."""
ascii_scalar = _scalar_writer(encode_basestring_ascii, ascii_json)
"""`ascii_json` of one value; fast for str, None, bool, int and float."""


def float_json(value: float) -> str:
    """The JSON of a float (``float`` exactly, not a subclass), as both encoders write it."""
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return repr(value)  # float.__repr__ for an exact float; the builtin skips the unbound-method call


_last_created: tuple[float | None, str] = (None, "")


def created_json(value: float) -> str:
    """`float_json` of a handle's ``created_at``. A launch writes it twice in a row (the
    capability's message, then the handle's JSON), and a float's shortest repr is the
    dearest part of either: the last one is kept."""
    global _last_created
    last = _last_created
    if value is last[0]:
        return last[1]
    text = float_json(value)
    _last_created = (value, text)
    return text


def handle_json(h: Any) -> str:
    """`canonical_json(handle.to_dict())` of a `SubagentHandle`."""
    s, e = scalar, encode_basestring
    # The common types inline (this runs twice for every child); anything else through `scalar`.
    # An exact int is written by the f-string itself: it formats as its repr, with no call at all.
    cap, sid, role, cid, pid, provider, model, created, version, depth = (
        h.capability, h.subagent_id, h.role, h.correlation_id, h.parent_session_id, h.provider, h.model,
        h.created_at, h.contract_version, h.depth)
    return (
        f'{{"capability":{e(cap) if type(cap) is str else s(cap)},'
        f'"contract_version":{version if type(version) is int else s(version)},'
        f'"correlation_id":{"null" if cid is None else s(cid)},'
        f'"created_at":{created_json(created) if type(created) is float else s(created)},'
        f'"depth":{depth if type(depth) is int else s(depth)},'
        f'"model":{e(model) if type(model) is str else s(model)},'
        f'"parent_session_id":{e(pid) if type(pid) is str else s(pid)},'
        f'"provider":{e(provider) if type(provider) is str else s(provider)},'
        f'"role":{e(role) if type(role) is str else s(role)},"subagent_id":{e(sid) if type(sid) is str else s(sid)}}}'
    )
