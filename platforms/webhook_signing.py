"""Signing and verifying webhook requests: HMAC-SHA256 over a timestamp and the body.

Both directions use one scheme, ``v1``:

    X-Switchboard-Timestamp: 1700000000                  unix seconds, ASCII digits only
    X-Switchboard-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>." + payload)>

where ``payload`` is

- for a POST (a message in, a delivery out): the raw request body, byte for byte (a body sent
  compressed, ``Content-Encoding: gzip``, as it is before compression: the server decodes it first);
- for the signed read ``GET /webhooks/<route>/turns/<turn_id>``: the ASCII text
  ``"GET " + path``, the request path exactly as sent (percent-encoding included,
  query string excluded), e.g. ``GET /webhooks/alerts/turns/t-123``. Signing the
  path binds the signature to one turn, so it cannot be replayed to read another.

A request is accepted when the signature matches and the timestamp is at most
``tolerance`` seconds (300) away from the receiver's clock, either way. Within
that window a captured request can be sent again; the webhook adapter turns such
a replay into the same event id, so the gateway's inbox treats it as the
duplicate it is.
"""

from __future__ import annotations

import hmac
import math
import re

SCHEME = "v1"
TIMESTAMP_HEADER = "X-Switchboard-Timestamp"
SIGNATURE_HEADER = "X-Switchboard-Signature"
TOLERANCE = 300.0

_TIMESTAMP = re.compile(r"[0-9]{1,15}")
_HEX = re.compile(r"[0-9a-fA-F]{64}")


def get_payload(path: str) -> bytes:
    """What a signed GET signs in place of a body: ``b"GET " + path``."""
    return b"GET " + path.encode("utf-8")


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header value, ``v1=<hex>``, for ``body`` sent at ``timestamp``."""
    digest = hmac.digest(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, "sha256")
    return f"{SCHEME}={digest.hex()}"


def signed_headers(secret: str, body: bytes, *, now: float) -> dict[str, str]:
    """Timestamp and signature headers for sending ``body`` at time ``now``."""
    timestamp = str(int(now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body)}


def malformed(timestamp_header: str | None, signature_header: str | None) -> str | None:
    """Why no body could make these headers valid (`verify`'s first five reasons), else None:
    a request refused for this needs no body read."""
    if not timestamp_header:
        return "missing timestamp"
    if not signature_header:
        return "missing signature"
    if not _TIMESTAMP.fullmatch(timestamp_header):
        return "malformed timestamp"
    scheme, sep, given = signature_header.strip().partition("=")
    if not sep or scheme != SCHEME:
        return "unsupported signature scheme"
    if not _HEX.fullmatch(given):
        return "malformed signature"
    return None


def explain(reason: str, timestamp_header: str | None, signature_header: str | None, *, now: float,
            payload: str = "the body", tolerance: float = TOLERANCE) -> str | None:
    """What a sender refused for ``reason`` (one of `verify`'s) should fix, in words; None for another reason.
    ``payload`` names what the signature covers, as the receiver got it (``"the 57 bytes of the body"``).
    Never the secret or the expected signature; of the headers sent, only their lengths and how far off
    the timestamp is (told only to a sender whose signature was right)."""
    formula = (f"{SCHEME}= and the 64 hex digits of HMAC-SHA256, keyed with the route's secret, of the timestamp as"
               f" sent, \".\" and {payload}")
    clock = f"this server's clock reads {int(now)}"
    if reason == "missing timestamp":
        return f"send {TIMESTAMP_HEADER}: the time the request was signed, in whole Unix seconds ({clock})"
    if reason == "missing signature":
        return f"send {SIGNATURE_HEADER}: {formula}"
    if reason == "malformed timestamp":
        return (f"{TIMESTAMP_HEADER} must be Unix seconds as an integer: ASCII digits only, at most 15, no sign,"
                f" no fraction ({clock})")
    if reason == "unsupported signature scheme":
        return (f"{SIGNATURE_HEADER} must be {SCHEME}=<64 hex digits>: {SCHEME} is the only scheme (a bare digest"
                f" needs {SCHEME}= before it)")
    if reason == "malformed signature":
        given = (signature_header or "").strip().partition("=")[2]
        return (f"{SIGNATURE_HEADER} must be {SCHEME}= then the 64 hex digits of the HMAC-SHA256 digest (hex, not"
                f" base64); {len(given)} characters came after {SCHEME}=")
    if reason == "bad signature":
        return f"{SIGNATURE_HEADER} does not match {formula}: check the secret, and sign the exact bytes sent"
    if reason == "stale timestamp" and timestamp_header:
        sent = int(timestamp_header)
        way = "ahead of" if sent > now else "behind"
        # JavaScript's Date.now() counts milliseconds: a timestamp 1000 times too large is far ahead.
        millis = "; it looks like milliseconds: send whole seconds" if abs(sent / 1000 - now) <= tolerance else ""
        return (f"{TIMESTAMP_HEADER} is {math.ceil(abs(sent - now))} s {way} this server's clock; at most"
                f" {tolerance:g} s either way is accepted: check the sender's clock (NTP){millis}")
    return None


def verify(
    secret: str,
    timestamp_header: str | None,
    signature_header: str | None,
    body: bytes,
    *,
    now: float,
    tolerance: float = TOLERANCE,
) -> str | None:
    """None when the request is authentic and fresh, else why not.

    Reasons: ``"missing timestamp"``, ``"missing signature"``, ``"malformed
    timestamp"``, ``"unsupported signature scheme"`` (anything but ``v1=``),
    ``"malformed signature"``, ``"bad signature"``, ``"stale timestamp"``. The
    signature is checked before the clock, so only a sender that holds the secret
    learns that its clock is off; the comparison is constant-time. No reason
    contains the secret or the expected signature.
    """
    if reason := malformed(timestamp_header, signature_header):
        return reason
    assert timestamp_header is not None and signature_header is not None
    given = signature_header.strip().partition("=")[2]
    expected = sign(secret, timestamp_header, body).partition("=")[2]
    if not hmac.compare_digest(expected, given.lower()):
        return "bad signature"
    if abs(now - int(timestamp_header)) > tolerance:
        return "stale timestamp"
    return None
