"""Masking a text that will be cut works on what is kept and a margin only (a tool result of megabytes,
captured into a span, held every chat a second), and a secret or token crossing a cut stays masked as if
the whole text had been masked first."""

from __future__ import annotations

import re

import pytest

import gateway.logging as log
from gateway.excerpt import excerpt
from gateway.logging import MASK, MAX_TEXT_CHARS, bounded, redact, redacted_cut, register_secret
from gateway.tracing import captured

SECRET = "rc7-registered-secret-3b9e51d0"
"""Registered for the whole process: no other test writes it, so masking it hides nothing of theirs."""
TOKEN = "sk-" + "Q7w" * 10
KEEP = MAX_TEXT_CHARS // 2
NOTE = re.compile(r" …\[\d+ characters cut\]… ")


class Counting:
    """A token shape's regex that counts the characters it is asked to mask."""

    def __init__(self, regex: re.Pattern[str], seen: list[int]) -> None:
        self._regex, self._seen = regex, seen

    def sub(self, replacement: str, text: str) -> str:
        self._seen.append(len(text))
        return self._regex.sub(replacement, text)


@pytest.fixture
def scanned(monkeypatch) -> list[int]:
    seen: list[int] = []
    monkeypatch.setattr(log, "_PATTERNS", [(Counting(regex, seen), repl) for regex, repl in log._PATTERNS])
    return seen


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def test_a_huge_captured_text_is_masked_only_where_it_is_kept(scanned) -> None:
    text = f"start {TOKEN} " + "word " * 1_000_000 + f"{TOKEN} end"
    result = captured(text)
    assert max(scanned) < 4 * MAX_TEXT_CHARS, max(scanned)
    assert result.startswith(f"start {MASK} word") and result.endswith(f"word {MASK} end")


def test_a_huge_summary_is_joined_and_masked_only_where_it_is_read(scanned) -> None:
    text = f"a {TOKEN}\n\n" + "word\n" * 1_000_000
    assert redacted_cut(text, 40, _cut, read=80) == f"a {MASK} word word word word word word wor…"
    assert max(scanned) < 1_000, max(scanned)


def _parts(result: str) -> tuple[str, str]:
    head, tail = NOTE.split(result)
    return head, tail


@pytest.mark.parametrize("shift", range(-40, 41, 5))
@pytest.mark.parametrize("secret", [SECRET, TOKEN, "Bearer " + "b" * 40, "123456789:" + "T" * 35])
def test_a_secret_crossing_either_cut_of_a_captured_text_is_masked_as_if_all_were(secret: str, shift: int) -> None:
    register_secret(SECRET)
    filler = "x y " * (MAX_TEXT_CHARS // 2)
    text = f"{filler[:KEEP + shift]} {secret} {filler} {secret} {filler} {secret} {filler[:KEEP + shift]}"
    assert _parts(captured(text)) == _parts(bounded(redact(text)))


def test_a_token_longer_than_the_margin_crossing_the_end_is_masked_whole() -> None:
    run = "Z" * (KEEP + 5_000)
    for token in (f"sk-{run}", f"Bearer {run}", f"bot12345:{run}"):
        text = "x y " * MAX_TEXT_CHARS + f" {token} tail words"
        _, tail = _parts(captured(text))
        assert "ZZZZ" not in tail and tail.endswith(f"{MASK} tail words"), tail[:80]


@pytest.mark.parametrize("read", [80, 400])
@pytest.mark.parametrize("shift", range(-40, 41, 5))
def test_a_secret_crossing_what_a_cut_summary_reads_is_masked_as_if_all_were(read: int, shift: int) -> None:
    register_secret(SECRET)
    for secret in (SECRET, TOKEN, "Bearer " + "b" * 40):
        for at in (40, read):
            text = "w  " * 2 + "x\n" * ((at + shift) // 2) + f"{secret} " + "y z\t" * 2_000
            for cut in (_cut, excerpt):
                whole = redact(" ".join(text.split()))
                assert redacted_cut(text, 40, cut, read=read) == cut(whole, 40), (secret, at, cut)
