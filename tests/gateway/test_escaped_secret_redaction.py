"""A registered secret is masked as a JSON string or a repr escapes it (``\\"``, ``\\\\``, ``\\/``, ``\\u00e4``, a
surrogate pair, Go's ``\\u0026``; also escaped twice, a JSON body quoted in a JSON error) and as a URL quotes it
twice (``%252F``: a URL carried in another's query); many secrets are registered at the cost of one."""

from __future__ import annotations

import io
import json
import logging
import re
import string
import time
from urllib.parse import quote, quote_plus

import pytest
import yarl

import gateway.logging as log
from gateway.logging import MASK, logging_installed, redact, register_secret

SECRET = 'jq5"Tr\\ä/8&<ok> z😀'
"""A password with the punctuation JSON escapes; registered for the whole process: no other test writes it."""


def upper_hex(text: str) -> str:
    return text.replace("\\u00e4", "\\u00E4").replace("\\ud83d\\ude00", "\\uD83D\\uDE00")


FORMS = {
    "json ascii": json.dumps(SECRET)[1:-1],
    "json utf-8": json.dumps(SECRET, ensure_ascii=False)[1:-1],
    "json slash escaped": json.dumps(SECRET)[1:-1].replace("/", "\\/"),
    "json upper-case hex": upper_hex(json.dumps(SECRET)[1:-1]),
    "json as Go writes it": json.dumps(SECRET)[1:-1].replace("&", "\\u0026").replace("<", "\\u003c")
    .replace(">", "\\u003e"),
    "json in a json string": json.dumps(json.dumps(SECRET))[3:-3],
    "repr": repr(SECRET)[1:-1],
    "url quoted twice": quote(quote(SECRET, safe=""), safe=""),
    "form quoted twice": quote_plus(quote_plus(SECRET)),
    "lower-case hex twice": re.sub("%(25)?[0-9A-F]{2}", lambda m: m.group().lower(), quote(quote(SECRET, safe=""))),
    "url in a query": str(yarl.URL("https://h/login").with_query({"next": f"https://app/cb?key={quote(SECRET)}"}))
    .split("key%3D", 1)[1],
}


@pytest.fixture(autouse=True)
def _registered() -> None:
    register_secret(SECRET)


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
def test_a_secret_escaped_or_quoted_twice_is_masked(form: str) -> None:
    assert form != SECRET
    assert redact(f'upstream said {{"password": "{form}", "user": "ann"}}') == (
        f'upstream said {{"password": "{MASK}", "user": "ann"}}')


def test_a_secret_in_a_json_body_quoted_by_an_error_is_masked_in_the_log() -> None:
    body = json.dumps({"client_secret": SECRET, "grant_type": "client_credentials"})
    stream = io.StringIO()
    with logging_installed("INFO", "json", stream):
        logging.getLogger("plugin.oauth").error("token refused: %s", json.dumps({"request": body}))
    line = json.loads(stream.getvalue())
    assert "jq5" not in stream.getvalue() and "Tr" not in stream.getvalue()
    assert json.loads(json.loads(line["msg"].removeprefix("token refused: "))["request"]) == {
        "client_secret": MASK, "grant_type": "client_credentials"}


def test_text_that_only_resembles_an_escaped_secret_is_kept() -> None:
    near = json.dumps(SECRET.replace("Tr", "Tx"))
    assert redact(near) == near


def test_a_value_shorter_than_the_minimum_masks_none_of_its_forms() -> None:
    register_secret('q"/')
    text = 'q"/ q\\"\\/ q%2522%252F'
    assert redact(text) == text


@pytest.fixture
def no_secrets(monkeypatch) -> None:
    """The registry empty for one test, and as it was after: what it registers would slow every later one."""
    monkeypatch.setattr(log, "_secrets", set())
    monkeypatch.setattr(log, "_longest", 0)
    monkeypatch.setattr(log, "_secrets_re", None)


def test_many_secrets_are_registered_at_the_cost_of_one_pattern(no_secrets) -> None:
    alphabet = string.ascii_letters + string.digits + "/+=-_!$"
    secrets = [f"s{i:03d}" + "".join(alphabet[(i * 7 + k * 13) % len(alphabet)] for k in range(28)) for i in range(300)]
    started = time.perf_counter()
    for secret in secrets:
        register_secret(secret)
    masked = redact(f"routes {secrets[0]} {secrets[-1]} {quote(secrets[150], safe='')}")
    # Built anew at each registration, the pattern took 5 to 9 s for these; built once, a fraction of one.
    assert time.perf_counter() - started < 2.0
    assert masked == f"routes {MASK} {MASK} {MASK}"


def test_a_secret_registered_after_a_line_was_masked_is_masked_too(no_secrets) -> None:
    register_secret("first-secret-5c1")
    assert redact("a first-secret-5c1") == f"a {MASK}"
    register_secret("later-secret-9d2")
    assert redact('a first-secret-5c1 and "later-secret-9d2"') == f'a {MASK} and "{MASK}"'


@pytest.mark.parametrize("secret", ["nb\xa0sp-pass-3e7", "tab\tin-pass-3e7", "tag\U000e0041-pass-3e7"])
@pytest.mark.parametrize("writer", [repr, json.dumps, lambda text: repr(repr(text)),
                                    lambda text: json.dumps(json.dumps(text))],
                         ids=["repr", "json", "repr twice", "json twice"])
def test_a_secret_with_a_character_a_repr_writes_as_x_or_big_u_or_a_short_escape_is_masked(secret, writer) -> None:
    register_secret(secret)
    assert "pass-3e7" not in redact(f"refused: {writer(secret)}")
