"""A registered secret is masked as any URL or form body quotes it, wholly or in part: ``quote_plus`` (a space as
``+``), ``quote`` keeping ``/``, aiohttp's query (``/``, ``:`` and ``@`` kept), httpx's path, lower-case hex, UTF-8
bytes; also where such a form crosses the cut of a long text. A secret in any string setting (a webhook route's,
a model's api_key, the console token) may hold such characters."""

from __future__ import annotations

import re
from urllib.parse import quote, quote_plus, urlencode

import httpx2
import pytest
import yarl

from gateway.logging import MASK, MAX_TEXT_CHARS, bounded, redact, redacted_bounded, register_secret

SECRET = "qs7 K/9+zx=Wv:p@q~r"
"""Registered for the whole process: no other test writes it, so masking it hides nothing of theirs."""
ACCENTED = "qs7-pässwörd/2026!"
NOTE = re.compile(r" …\[\d+ characters cut\]… ")


def lower_hex(text: str) -> str:
    return re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), text)


FORMS = {
    "quote_plus": quote_plus(SECRET),
    "form body": urlencode({"client_secret": SECRET}).split("=", 1)[1],
    "quote keeping /": quote(SECRET),
    "lower-case hex": lower_hex(quote(SECRET, safe="")),
    "aiohttp query": str(yarl.URL("https://h/in").with_query({"k": SECRET})).split("k=", 1)[1],
    "aiohttp path": str(yarl.URL("https://h/") / SECRET).removeprefix("https://h/"),
    "httpx query": str(httpx2.URL("https://h/in", params={"k": SECRET})).split("k=", 1)[1],
    "httpx path": str(httpx2.URL("https://h/" + SECRET)).removeprefix("https://h/"),
    "only the space": SECRET.replace(" ", "+"),
    "only the slash": SECRET.replace("/", "%2F"),
}


@pytest.fixture(autouse=True)
def _registered() -> None:
    register_secret(SECRET)
    register_secret(ACCENTED)


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
def test_a_secret_quoted_wholly_or_in_part_is_masked(form: str) -> None:
    assert form != SECRET
    assert redact(f"POST https://hooks.example/in?token={form}&room=7 refused") == (
        f"POST https://hooks.example/in?token={MASK}&room=7 refused")


def test_a_secret_with_letters_beyond_ascii_is_masked_as_its_utf8_bytes_are_quoted() -> None:
    for form in (quote(ACCENTED), quote_plus(ACCENTED), lower_hex(quote(ACCENTED, safe=""))):
        assert redact(f"GET /x?key={form} 401") == f"GET /x?key={MASK} 401", form


def test_text_that_only_resembles_a_quoted_secret_is_kept() -> None:
    near = quote_plus(SECRET).replace("Wv", "Wx")
    assert redact(near) == near


@pytest.mark.parametrize("shift", range(-60, 61, 15))
def test_a_quoted_secret_crossing_a_cut_is_masked_as_if_all_were(shift: int) -> None:
    form = lower_hex(quote_plus(SECRET))
    filler = "x y " * MAX_TEXT_CHARS
    keep = MAX_TEXT_CHARS // 2
    text = f"{filler[:keep + shift]}{form} {filler} {form}{filler[:keep + shift]}"
    # The note counts the text's own characters cut, so only the parts kept are compared.
    assert NOTE.split(redacted_bounded(text)) == NOTE.split(bounded(redact(text)))
    assert "Wv" not in redacted_bounded(text)
