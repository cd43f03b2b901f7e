"""Masking only what a cut keeps (`redacted_bounded`, `redacted_cut`, the log's `RedactionFilter`) never
shows a piece of a secret that masking the whole text first would have hidden."""

from __future__ import annotations

from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gateway.logging as log
from gateway.logging import (
    MASK,
    MAX_TEXT_CHARS,
    bounded,
    redact,
    redacted_bounded,
    redacted_cut,
    register_secret,
)

SECRET = "Zq$9hunter!x-pw"
"""Registered for the whole process; its ``$`` and ``!`` end a run of token characters inside it."""
KEEP = MAX_TEXT_CHARS // 2
SHAPES = [SECRET, "sk-" + "q7w" * 6, "Bearer " + "z9k" * 8, "123456789:" + "m4n" * 11, "xoxb-" + "r5t" * 4]
"""Secrets and token shapes, of characters no filler has: a piece of one in the output came from it."""
PIECES = st.sampled_from(SHAPES + ["A" * 300, "A" * 9_000, " ", "  \n ", "$", ".", "Bearer", "Bot "])
FILLER = ". , " * 20_000


def _leaks(got: str, want: str) -> list[str]:
    """The pieces (5 characters) of a secret or a token's body in ``got`` but not in ``want``."""
    found = []
    for shape in SHAPES:
        body = shape.split(" ")[-1] if shape.startswith("Bearer") else shape
        found += [body[i:i + 5] for i in range(len(body) - 4) if body[i:i + 5] in got and body[i:i + 5] not in want]
    return found


def test_a_secret_ending_a_long_run_of_token_characters_at_the_tail_stays_masked() -> None:
    register_secret(SECRET)
    text = FILLER + "A" * (KEEP + 1_000) + SECRET + " ok" * 10
    assert "hunter" not in redacted_bounded(text)
    assert redacted_bounded(text).endswith(f"{MASK}" + " ok" * 10)


def test_a_token_shape_a_masked_secret_lets_start_crossing_the_tails_start_stays_masked() -> None:
    # Masked whole, the secret leaves ``***sk-…``: a key from there on. Masked from inside the secret on,
    # ``x-pwsk-…`` is no key, and the run, crossing into what is kept, showed.
    register_secret(SECRET)
    margin = log._margin()
    run = "sk-" + "q7w" * ((KEEP + margin + margin // 2 - 7) // 3)
    text = FILLER + SECRET + run + " end"
    assert len(text) - (KEEP + margin) - margin < len(FILLER) + len(SECRET) - 4 < len(text) - (KEEP + margin)
    assert redacted_bounded(text).endswith(f" {MASK}{MASK} end") and "q7wq7" not in redacted_bounded(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=12), st.lists(PIECES, max_size=12),
       st.integers(-400, 400), st.integers(-400, 400))
def test_no_piece_of_a_secret_crossing_either_cut_shows(before: list[str], after: list[str],
                                                        head_shift: int, tail_shift: int) -> None:
    register_secret(SECRET)
    head, tail = "".join(before), "".join(after)
    text = FILLER[:max(0, KEEP + head_shift - len(head) // 2)] + head + FILLER + head + tail + FILLER + tail
    text += FILLER[:max(0, KEEP + tail_shift - len(tail) // 2)]
    assert len(text) > 4 * MAX_TEXT_CHARS
    assert not _leaks(redacted_bounded(text), bounded(redact(text)))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@settings(max_examples=60, deadline=None)
@given(st.lists(PIECES.filter(lambda piece: len(piece) < 1_000), max_size=8), st.integers(0, 120),
       st.sampled_from([80, 200]))
def test_no_piece_of_a_secret_crossing_what_a_cut_summary_reads_shows(pieces: list[str], shift: int,
                                                                      read: int) -> None:
    register_secret(SECRET)
    text = "w \n\t " * shift + "".join(pieces) + " y  z\n" * 2_000
    got = redacted_cut(text, read // 2, _cut, read=read)
    assert not _leaks(got, _cut(redact(" ".join(text.split())), read // 2))


def test_a_token_percent_encoded_in_a_url_is_masked():
    # An error page quoting the request's URL quotes the token as the URL does: its colon as %3A.
    token = "7012345678:AAH9abcdefghijklmnopqrstuvwxyz01234"
    register_secret(token)
    assert token.split(":")[1] not in redact(f"GET /bot{quote(token, safe='')}/getMe refused")
    shaped = "7098765432%3AAAG1abcdefghijklmnopqrstuvwxyz56789"  # not registered: its shape alone
    assert "AAG1abcdefghijklmnopqrstuvwxyz56789" not in redact(f"GET /bot{shaped}/getMe refused")


def test_a_percent_encoded_token_shape_after_a_long_run_crossing_the_tails_start_stays_masked() -> None:
    # Masked whole, ``…bot123456789%3A…`` is a token after /bot. Past a run of token characters longer than the
    # margin, what crosses the tail's start was masked up to its ``%`` (no token character), and the ``%3A…``
    # left after the mask, no token without its bot id, showed.
    register_secret(SECRET)
    tail = "A" * 9_000 + "bot123456789%3A" + "m4n" * 11
    text = FILLER + tail + FILLER + tail + FILLER[:KEEP - len(tail) // 2]
    assert "m4nm4n" not in bounded(redact(text))
    assert "m4nm4n" not in redacted_bounded(text)
