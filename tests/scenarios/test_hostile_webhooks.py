"""Hostile webhook traffic against the real `switchboard run`: never a 5xx, never an unsigned
request accepted, and the gateway always starts again afterwards on the same state directory."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import time
from dataclasses import dataclass
from urllib.parse import unquote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from platforms.webhook_signing import sign
from tests.gateway.cli_process import Running, write_config

SECRET = "fuzz-secret-0123456789"
ROUTES = {"hook": {"secret": SECRET}, "pull": {"secret": "another-secret-987"}}


def gateway_config(tmp_path):
    return write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"),
        "server": {"port": 0, "header_timeout_seconds": 1, "body_timeout_seconds": 1},
        "model": {"demo": {"child_steps": 0, "step_seconds": 0}},
        "platforms": {"webhook": {"enabled": True, "routes": ROUTES}},
    })


def send(url: str, raw: bytes, timeout: float = 10.0) -> tuple[int | None, bytes]:
    """One request over its own connection: (status, body), status None if closed unanswered."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(raw)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    reply = b"".join(chunks)
    if not reply.startswith(b"HTTP/1."):
        return None, reply
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def request(method: bytes, path: bytes, headers: dict[bytes, bytes], body: bytes) -> bytes:
    lines = [method + b" " + path + b" HTTP/1.1", b"Host: gateway", b"Connection: close",
             *(k + b": " + v for k, v in headers.items())]
    if b"Transfer-Encoding" not in headers:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def signed(body: bytes, *, secret: str = SECRET, timestamp: int | None = None) -> dict[bytes, bytes]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {b"X-Switchboard-Timestamp": ts.encode(), b"X-Switchboard-Signature": sign(secret, ts, body).encode(),
            b"Content-Type": b"application/json"}


# -- what hostile clients send --------------------------------------------------------------

TEXTS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\\ud800", "a\\udfff", "\\ud83d\\ude00", "\\u0000", "/stop", "/new", "- a\\n- b", "é", "\\\\"]),
)
JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXTS,
                        st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(),
                                                                             max_size=2))


@st.composite
def json_bodies(draw) -> bytes:
    """JSON objects with the fields the intake reads, typed right or wrong, escapes spelt raw."""
    fields = []
    for name in draw(st.lists(st.sampled_from(["text", "chat_id", "user", "extra"]), unique=True, max_size=4)):
        if draw(st.booleans()):
            value = '"' + draw(TEXTS).replace('"', "") + '"'  # raw: "\ud800" reaches the parser as an escape
        else:
            value = json.dumps(draw(JSON_VALUES))
        fields.append(f'"{name}": {value}')
    return ("{" + ", ".join(fields) + "}").encode("utf-8", "surrogatepass")


@st.composite
def messages(draw) -> bytes:
    """Bodies a signed caller could mean: a text, maybe a chat and a user, odd characters included."""
    fields = {"text": "x" + draw(TEXTS).replace('"', "")}
    for name in draw(st.lists(st.sampled_from(["chat_id", "user"]), unique=True)):
        fields[name] = draw(TEXTS).replace('"', "") or "c"
    return ("{" + ", ".join(f'"{k}": "{v}"' for k, v in fields.items()) + "}").encode("utf-8", "surrogatepass")


BODIES = st.one_of(
    json_bodies(),
    st.binary(max_size=300),
    st.sampled_from([b"", b"{", b"[]", b'"text"', b"null", b'{"text": "\xff\xfe"}', b"[" * 5000,
                     b'{"text": "x", "chat_id": 1e999}', b'{"text": NaN}', "{\"text\": \"ok\"}".encode("utf-16")]),
)
SIGNATURES = st.sampled_from(["good", "upper", "wrong-secret", "other-route", "missing", "no-timestamp", "stale",
                              "future", "malformed", "scheme", "empty"])
METHODS = st.one_of(st.sampled_from([b"POST", b"GET", b"PUT", b"DELETE", b"HEAD", b"OPTIONS", b"PATCH"]),
                    st.binary(min_size=1, max_size=8))
PATHS = st.one_of(
    st.sampled_from([b"/webhooks/hook", b"/webhooks/pull", b"/webhooks/nope", b"/webhooks/", b"/webhooks/hook/",
                     b"/webhooks/hook/turns/t-1", b"/webhooks/hook/turns/%00", b"/healthz", b"/", b"*",
                     b"/webhooks/%68ook", b"/webhooks/hook?x=1", b"/webhooks/" + b"h" * 300, b"/webhooks/h\xc3\xa9"]),
    st.binary(min_size=1, max_size=30).map(lambda b: b"/" + b.replace(b" ", b"").replace(b"\r", b"").replace(b"\n", b"")),
)


@dataclass(frozen=True)
class Hostile:
    method: bytes
    path: bytes
    body: bytes
    signature: str
    chunked: bool
    content_type: bytes | None

    @property
    def authentic(self) -> bool:
        """Signed, freshly, with the secret of the route the path names (percent-decoded, as served)."""
        route = re.fullmatch(r"/webhooks/([^/]+)", unquote(self.path.partition(b"?")[0].decode("latin-1")))
        if route is None:
            return False
        secret_of = {"good": "hook", "upper": "hook", "other-route": "pull"}
        return secret_of.get(self.signature) == route.group(1)

    def raw(self) -> bytes:
        headers = self._signature_headers()
        if self.content_type is not None:
            headers[b"Content-Type"] = self.content_type
        body = self.body
        if self.chunked:
            headers[b"Transfer-Encoding"] = b"chunked"
            body = (f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n") if body else b"0\r\n\r\n"
        return request(self.method, self.path, headers, body)

    def _signature_headers(self) -> dict[bytes, bytes]:
        now = int(time.time())
        kind = self.signature
        headers = signed(self.body, secret="wrong" if kind == "wrong-secret" else
                         ROUTES["pull"]["secret"] if kind == "other-route" else SECRET,
                         timestamp=now - 400 if kind == "stale" else now + 400 if kind == "future" else now)
        if kind == "upper":
            headers[b"X-Switchboard-Signature"] = b"v1=" + headers[b"X-Switchboard-Signature"][3:].upper()
        elif kind == "missing":
            del headers[b"X-Switchboard-Signature"]
        elif kind == "no-timestamp":
            del headers[b"X-Switchboard-Timestamp"]
        elif kind == "malformed":
            headers[b"X-Switchboard-Signature"] = b"v1=zz" + b"0" * 62
        elif kind == "scheme":
            headers[b"X-Switchboard-Signature"] = b"v2=" + headers[b"X-Switchboard-Signature"][3:]
        elif kind == "empty":
            headers[b"X-Switchboard-Signature"] = b""
        return headers


CONTENT_TYPES = st.sampled_from([None, b"application/json", b"text/plain", b"application/json; charset=latin-1"])
ROUTE_PATHS = st.sampled_from([b"/webhooks/hook", b"/webhooks/pull"])
HOSTILE = st.one_of(
    # Mostly what a caller with a bug (or half a secret) sends; then anything at all.
    st.builds(Hostile, st.just(b"POST"), st.just(b"/webhooks/hook"), messages(), st.sampled_from(["good", "upper"]),
              st.booleans(), CONTENT_TYPES),
    st.builds(Hostile, st.just(b"POST"), ROUTE_PATHS, json_bodies(), SIGNATURES, st.booleans(), CONTENT_TYPES),
    st.builds(Hostile, st.just(b"POST"), ROUTE_PATHS, BODIES, SIGNATURES, st.booleans(), CONTENT_TYPES),
    st.builds(Hostile, METHODS, PATHS, BODIES, SIGNATURES, st.booleans(), CONTENT_TYPES),
)


def inbox_rows(tmp_path) -> int:
    db = sqlite3.connect(tmp_path / "state" / "switchboard.db")
    try:
        return db.execute("SELECT count(*) FROM gateway_inbox").fetchone()[0]
    finally:
        db.close()


def test_a_lone_surrogate_is_refused_never_stored_and_the_gateway_starts_again(tmp_path):
    config = gateway_config(tmp_path)
    body = b'{"text": "hi", "chat_id": "\\ud800"}'
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()
        for _ in range(2):  # and again: the retry is no "duplicate" of something stored
            status, reply = send(gateway.url, request(b"POST", b"/webhooks/hook", signed(body), body))
            assert status == 400, reply
            assert '"chat_id" is not valid Unicode' in json.loads(reply)["error"]
    assert gateway.proc.returncode == 0
    assert inbox_rows(tmp_path) == 0
    with Running(tmp_path, "--config", str(config)) as again:
        again.started()
        ok = b'{"text": "hi", "chat_id": "ok \\ud83d\\ude00"}'  # a surrogate *pair* is an ordinary character
        assert send(again.url, request(b"POST", b"/webhooks/hook", signed(ok), ok))[0] == 202
    assert again.proc.returncode == 0


def test_fuzzed_webhook_intake(tmp_path):
    config = gateway_config(tmp_path)
    outcomes: dict[str, int] = {}
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.started()

        @settings(max_examples=300, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(HOSTILE)
        def hostile_request_is_answered_sanely(hostile: Hostile) -> None:
            status, reply = send(gateway.url, hostile.raw())
            assert status is None or status < 500, (hostile, status, reply)
            if status == 202:
                assert hostile.authentic and hostile.method == b"POST", hostile
            outcomes[str(status)] = outcomes.get(str(status), 0) + 1

        hostile_request_is_answered_sanely()
        assert send(gateway.url, request(b"GET", b"/healthz", {}, b""))[0] == 200
    assert gateway.proc.returncode == 0, gateway.lines
    assert not [line for line in gateway.lines if "Traceback" in line or " ERROR " in line], "\n".join(gateway.lines)
    assert {"202", "400", "401", "404"} <= set(outcomes), outcomes  # the search reached every kind of answer
    with Running(tmp_path, "--config", str(config)) as again:  # whatever was stored, it starts
        again.started()
    assert again.proc.returncode == 0, again.lines
