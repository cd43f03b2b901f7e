"""Capability tokens for subagent handles: versioned HMAC-SHA256 under a rotating key ring.

A token is ``v1.<kid>.<64 hex>``: the HMAC, under key ``kid``, of a canonical
JSON array of the handle's identity fields. JSON (not ``"|".join``) keeps the
encoding unambiguous: no choice of field values makes two identities encode
alike. Keys are persisted in the journal, so handles keep verifying after a
restart; rotating adds a signing key while old keys still verify, and retiring
a key revokes every handle signed with it.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring_ascii
from typing import Any, NamedTuple

from ._canonical import ascii_json, ascii_scalar, created_json
from ._contract import CONTRACT_VERSION, SubagentHandle, is_well_formed_handle

TOKEN_VERSION = "v1"
_DOMAIN = "switchboard.subagent-handle"  # separates these MACs from any other use of the key
_SECRET_BYTES = 32
_DIGEST_HEX = 64
_BLOCK = 64  # SHA-256's block size: an HMAC key is padded (or first hashed) to it
_Pads = tuple[Any, Any]
"""A key's HMAC-SHA256 states (`_pads`): SHA-256 after the key XOR ipad, and after the key XOR opad."""


class KeyRow(NamedTuple):
    """One key as the journal stores it; ``retired_at`` is None while the key verifies."""

    kid: str
    secret: bytes
    created_at: float
    retired_at: float | None

    def __repr__(self) -> str:  # never the secret: a row may end up in a log line or an assertion's message
        return (f"KeyRow(kid={self.kid!r}, secret=<hidden>, created_at={self.created_at!r},"
                f" retired_at={self.retired_at!r})")


_TABLE = "the lifecycle journal's handle key table (lifecycle_keys)"


def _stored_time(kid: str, name: str, value: object) -> float:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds):  # an infinite created_at would make its key the signing one for good
        raise ValueError(f"{_TABLE}: key {kid!r} has a {name} that is not a finite number of seconds")
    return seconds


class KeyRing:
    """Signing keys by key id: one active key signs; every unretired key verifies.

    Not thread-safe; the lifecycle service uses it from the event loop only.
    Every mutation (construction with no keys, `rotate`, `retire`) changes rows
    the caller must persist: save `export()` whole (``Journal.save_keys``: one transaction of upserts).
    The service changes a `copy` and signs with it once that is committed (``_commit_ring``).
    """

    __slots__ = ("_keys", "_active", "_clock", "has_retired", "_macs")

    def __init__(self, rows: Iterable[tuple] = (), *, clock: Callable[[], float] = time.time):
        """Load ``rows`` (as from ``Journal.load_keys``); create a first key when none can sign.

        Raises ValueError naming the table, the key and what is wrong for a malformed row: a corrupt key table
        must not go unnoticed, nor surface as a bare TypeError from deep inside.
        """
        self._clock = clock
        self._keys: dict[str, KeyRow] = {}
        self._macs: dict[str, _Pads] = {}
        """Each verifying key's padded hash states (`_pads`), made on its first use."""
        for raw in rows:
            try:
                kid, secret, created_at, retired_at = raw
            except (TypeError, ValueError):
                raise ValueError(f"{_TABLE}: a row that is not (kid, secret, created_at, retired_at)") from None
            if not (isinstance(kid, str) and kid and "." not in kid):
                raise ValueError(f"{_TABLE}: malformed key id {kid!r}")
            if not isinstance(secret, bytes | bytearray) or len(secret) < 16:
                raise ValueError(f"{_TABLE}: key {kid!r} has no usable secret")
            created = _stored_time(kid, "created_at", created_at)
            retired = None if retired_at is None else _stored_time(kid, "retired_at", retired_at)
            self._keys[kid] = KeyRow(kid, bytes(secret), created, retired)
        live = [row for row in self._keys.values() if row.retired_at is None]
        self.has_retired = len(live) < len(self._keys)
        """Whether any key was ever retired: until one is, every capability this ring made still
        verifies (an attribute, not a property: a plugin's every wait and result reads it)."""
        # The newest live key signs; ties (same created_at) break on kid so every load picks the same one.
        self._active = max(live, key=lambda r: (r.created_at, r.kid)).kid if live else None
        if self._active is None:
            self.rotate()

    def copy(self) -> KeyRing:
        """A ring of the same keys, to change and commit before it replaces this one (its key states too:
        nothing to hash again)."""
        ring = KeyRing.__new__(KeyRing)
        ring._clock, ring._active, ring.has_retired = self._clock, self._active, self.has_retired
        ring._keys, ring._macs = dict(self._keys), dict(self._macs)
        return ring

    @property
    def active_kid(self) -> str:
        """The key that signs new handles."""
        assert self._active is not None
        return self._active

    def rotate(self) -> str:
        """Create a new signing key and return its id; older keys keep verifying."""
        kid = secrets.token_hex(4)
        while kid in self._keys:
            kid = secrets.token_hex(4)
        # Stamped after every key held, whatever the clock says: a restart makes the newest key the signing one,
        # and a clock set back since an older key was made (or that key stamped ahead) had the key rotated out
        # sign again after it, the one rotated in only verifying.
        now, newest = float(self._clock()), max((row.created_at for row in self._keys.values()), default=-math.inf)
        created = now if now > newest else math.nextafter(newest, math.inf)
        self._keys[kid] = KeyRow(kid, secrets.token_bytes(_SECRET_BYTES), created, None)
        self._active = kid
        return kid

    def retire(self, kid: str) -> None:
        """Revoke ``kid``: handles signed with it stop verifying, for good. Idempotent.

        Retiring the active key rotates first, so signing never stops. Raises
        KeyError for an unknown kid.
        """
        row = self._keys[kid]
        if row.retired_at is not None:
            return
        if kid == self._active:
            self.rotate()
        self._keys[kid] = row._replace(retired_at=float(self._clock()))
        self._macs.pop(kid, None)
        self.has_retired = True

    def export(self) -> list[KeyRow]:
        """Every key, retired ones included (so a retired kid stays known as retired), oldest first."""
        return sorted(self._keys.values(), key=lambda r: (r.created_at, r.kid))

    def signs_for(self, capability: str) -> bool:
        """Whether the key that made ``capability`` is known and not retired (no HMAC check)."""
        parts = capability.split(".") if isinstance(capability, str) else ()
        if len(parts) != 3:
            return False
        row = self._keys.get(parts[1])
        return row is not None and row.retired_at is None

    def _verifying_pads(self, kid: str) -> _Pads | None:
        """The padded hash states of ``kid`` for `_hex_mac` (None for an unknown or retired key)."""
        pads = self._macs.get(kid)
        if pads is None:
            row = self._keys.get(kid)
            if row is None or row.retired_at is not None:
                return None
            pads = self._macs[kid] = _pads(row.secret)
        return pads

    def _signing_pads(self) -> tuple[str, _Pads]:
        kid = self._active  # set whenever the ring exists (`__init__` rotates without one)
        pads = self._macs.get(kid)
        return kid, pads if pads is not None else self._verifying_pads(kid)


def _pads(secret: bytes) -> _Pads:
    """The HMAC-SHA256 (RFC 2104) key schedule of ``secret``, as `hmac` computes it."""
    key = hashlib.sha256(secret).digest() if len(secret) > _BLOCK else secret
    key = key.ljust(_BLOCK, b"\0")
    return hashlib.sha256(bytes(b ^ 0x36 for b in key)), hashlib.sha256(bytes(b ^ 0x5C for b in key))


def _hex_mac(pads: _Pads, message: bytes) -> str:
    """``hmac.new(secret, message, sha256).hexdigest()``, the same bytes, from the key's padded states: two
    copies of plain hash states cost half as much as a copy of an `hmac.HMAC` (a launch signs every child)."""
    inner, outer = pads[0].copy(), pads[1].copy()
    inner.update(message)
    outer.update(inner.digest())
    return outer.hexdigest()


def _message(
    subagent_id: str,
    parent_session_id: str | None,
    correlation_id: str | None,
    created_at: float,
    role: str,
    depth: int,
    provider: str | None,
    model: str | None,
) -> bytes:
    # The ASCII JSON array [domain, token version, contract version, the fields...], written
    # directly (the same bytes as json.dumps(fields, separators=(",", ":"))).
    # float(): a handle read back from JSON must sign the same as the one issued (1 vs 1.0).
    # Every non-ASCII character is escaped, lone surrogates included, so encoding cannot fail.
    # Plain str values are escaped inline (they are nearly all of them), an exact int is formatted by
    # the f-string itself; `ascii_scalar` takes the rest.
    j, e, s = ascii_scalar, encode_basestring_ascii, str
    return (
        f'{_PREFIX}{e(subagent_id) if type(subagent_id) is s else j(subagent_id)},'
        f'{"null" if parent_session_id is None else e(parent_session_id) if type(parent_session_id) is s else j(parent_session_id)},'
        f'{"null" if correlation_id is None else j(correlation_id)},{created_json(float(created_at))},'
        f'{e(role) if type(role) is s else j(role)},{depth if type(depth) is int else j(depth)},'
        f'{"null" if provider is None else e(provider) if type(provider) is s else j(provider)},'
        f'{"null" if model is None else e(model) if type(model) is s else j(model)}]'
    ).encode("ascii")


_PREFIX = f"[{ascii_json(_DOMAIN)},{ascii_json(TOKEN_VERSION)},{ascii_json(CONTRACT_VERSION)},"


def sign(
    keyring: KeyRing,
    *,
    subagent_id: str,
    parent_session_id: str | None,
    correlation_id: str | None,
    created_at: float,
    role: str,
    depth: int,
    provider: str | None,
    model: str | None,
) -> str:
    """Return the capability token for these identity fields under the active key."""
    kid, pads = keyring._signing_pads()
    message = _message(subagent_id, parent_session_id, correlation_id, created_at, role, depth, provider, model)
    return f"{TOKEN_VERSION}.{kid}.{_hex_mac(pads, message)}"


def verify(keyring: KeyRing, handle: object) -> bool:
    """Whether ``handle`` is a well-formed handle of this contract version carrying a valid token.

    False (never an exception) for anything else: wrong types, another contract
    or token version, an unknown or retired kid, or any tampered field.
    """
    try:
        if not is_well_formed_handle(handle):
            return False
        assert isinstance(handle, SubagentHandle)
        if handle.contract_version != CONTRACT_VERSION:
            return False
        parts = handle.capability.split(".")
        if len(parts) != 3 or parts[0] != TOKEN_VERSION:
            return False
        pads = keyring._verifying_pads(parts[1])
        digest = parts[2]
        # compare_digest rejects non-ASCII str with TypeError; check shape first.
        if pads is None or len(digest) != _DIGEST_HEX or not digest.isascii():
            return False
        message = _message(
            handle.subagent_id,
            handle.parent_session_id,
            handle.correlation_id,
            handle.created_at,
            handle.role,
            handle.depth,
            handle.provider,
            handle.model,
        )
        return hmac.compare_digest(digest, _hex_mac(pads, message))
    except Exception:  # noqa: BLE001 - verification fails closed, it never raises
        return False
