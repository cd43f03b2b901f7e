"""Token shapes written as clients and encoders write them are masked: an HTTP scheme in any case and followed by
any spaces or a tab (RFC 9110), Slack's refresh and rotating tokens, a Telegram token whose colon a URL quoted in
another or a JSON string escapes; prose that merely names a scheme is left as it is."""

from __future__ import annotations

import pytest

import gateway.logging as log
from gateway.logging import MASK, bounded, redact, redacted_bounded

BODY = "q7wZ9k.m4n-r5t_~+/=x2"
TELEGRAM = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


@pytest.fixture(autouse=True)
def _no_secrets(monkeypatch) -> None:
    # Only the shapes: a secret registered by another test would mask text of these.
    monkeypatch.setattr(log, "_secrets", set())
    monkeypatch.setattr(log, "_longest", 0)
    monkeypatch.setattr(log, "_secrets_re", None)


@pytest.mark.parametrize(("line", "masked"), [
    (f"Authorization: bearer {BODY}", f"Authorization: bearer {MASK}"),
    (f"Authorization: BEARER {BODY}", f"Authorization: BEARER {MASK}"),
    (f"Authorization: BeArEr {BODY}", f"Authorization: BeArEr {MASK}"),
    (f"Authorization: Bearer\t{BODY}", f"Authorization: Bearer\t{MASK}"),
    (f"Authorization: Bearer  {BODY}", f"Authorization: Bearer  {MASK}"),
    (f"Authorization: Bot\t{BODY} ok", f"Authorization: Bot\t{MASK} ok"),
    ("refresh xoxe-1-My0xLTI0LTM0NTY3ODkw ok", f"refresh {MASK} ok"),
    ("access xoxe.xoxp-1-Mi0yLTM0MTQwNDE0MDE3Ni0z ok", f"access {MASK} ok"),
    ("access xoxe.xoxb-1-Mi0yLTM0MTQwNDE0MDE3Ni0z ok", f"access {MASK} ok"),
    (f"GET /bot123456789%253A{TELEGRAM}/getMe", f"GET /bot{MASK}/getMe"),
    (f"GET /bot123456789%253a{TELEGRAM}/getMe", f"GET /bot{MASK}/getMe"),
    (f'{{"token": "123456789\\u003a{TELEGRAM}"}}', f'{{"token": "{MASK}"}}'),
    (f'{{"token": "123456789\\u003A{TELEGRAM}"}}', f'{{"token": "{MASK}"}}'),
    (f'"{{\\"token\\": \\"123456789\\\\u003a{TELEGRAM}\\"}}"', f'"{{\\"token\\": \\"{MASK}\\"}}"'),
])
def test_a_token_shape_as_clients_and_encoders_write_it_is_masked(line: str, masked: str) -> None:
    assert redact(line) == masked


@pytest.mark.parametrize("line", [
    "the bearer of this letter is welcome",
    "bearer tokens are checked by platforms.telegram.adapter",  # no token-like run after the scheme
    "a bot platforms.telegram.adapter_for_groups started",  # `Bot` stays case-sensitive
    "rebearer abcdefghijklmnopqrstuvwxyz0123",  # no scheme: a word ends in it
    "xoxe.abcdefghijklmnop and xoxq-abcdefghijklmnop",
    "outbox key tc-123456789\\u003acard-abcdefghijklmnopqrstuvwxyz0123",
])
def test_prose_naming_a_scheme_or_a_near_shape_is_left_as_it_is(line: str) -> None:
    assert redact(line) == line


@pytest.mark.parametrize("token", [
    "bearer" + " " * 300 + "q7w" * 30,
    "Bearer\t \t" + "q7w" * 60,
    "123456789\\u003a" + "q7w" * 60,
    "bot123456789\\\\u003a" + "q7w" * 60,
])
def test_a_token_shape_crossing_the_start_of_a_cut_texts_tail_stays_masked(token: str) -> None:
    # The tail of a long text is masked from a place before it where masking reads as for the whole text; that
    # place was taken inside such a token (after its backslash, between its scheme and its spaces), and the
    # rest of the token, no shape without its start, showed. The body is short: a run of token characters
    # crossing the cut and starting more than a margin before it is masked whole whatever it starts with.
    keep = log.MAX_TEXT_CHARS // 2
    for shift in range(-400, 400, 9):
        text = ". " * 40_000 + token + " ." * (keep // 2 + shift)
        assert "q7wq7w" not in bounded(redact(text))
        assert "q7wq7w" not in redacted_bounded(text), shift
