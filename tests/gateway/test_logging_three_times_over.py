"""A registered secret escaped or percent-encoded three times over (a JSON body quoted in an error that is itself
JSON, and that in a log shipper's JSON; a URL in a URL in a query), and a run of its backslashes written partly as
``\\\\`` and partly as ``\\u005c``, is masked; so is a Discord bot token after ``bot`` in any case."""

from __future__ import annotations

import json
import time
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gateway.logging as log
from gateway.logging import MASK, redact
from tests.gateway.test_logging_backslash_secrets import FENCES, json_of, only, repr_of, secrets

THRICE = {
    "json three times": lambda s: json_of(json_of(json_of(s))),
    "json utf-8 three times": lambda s: json_of(json_of(json_of(s, ascii_only=False), ascii_only=False),
                                                ascii_only=False),
    "repr of json twice": lambda s: repr_of(json_of(json_of(s))),
    "repr three times": lambda s: repr_of(repr_of(repr_of(s))),
    "url three times": lambda s: quote(quote(quote(s, safe=""), safe=""), safe=""),
}


@pytest.mark.parametrize("writer", sorted(THRICE))
@pytest.mark.parametrize("secret", ["s3cr3t\\webhook", 'p@ss/w0rd"q', "zq9x-éàü-42", "a\\\\b-9", "c0rrect horse",
                                    "😀emoji-pass", "tab\there"])
def test_a_secret_written_three_times_over_is_masked(secret: str, writer: str) -> None:
    with only(secret):
        assert redact(f"⟦{THRICE[writer](secret)}⟧") == f"⟦{MASK}⟧"


@settings(max_examples=200)  # each example builds a pattern of its own
@given(secret=secrets, writer=st.sampled_from(sorted(THRICE)),
       fences=st.lists(st.text(FENCES, min_size=1, max_size=3), min_size=3, max_size=3))
def test_every_form_three_times_over_is_masked_and_nothing_else(secret: str, writer: str, fences: list[str]) -> None:
    form = THRICE[writer](secret)
    with only(secret):
        masked = redact(f"{fences[0]}{form}{fences[1]}{form}{fences[2]}")
    assert masked == f"{fences[0]}{MASK}{fences[1]}{MASK}{fences[2]}", (secret, form)


def _mixed(secret: str, codes: list[bool]) -> str:
    """``secret`` as JSON writes it, each backslash as ``\\\\`` or, where ``codes`` says so, ``\\u005c``."""
    out, backslashes = [], iter(codes)
    for char in secret:
        out.append(("\\u005c" if next(backslashes, False) else "\\\\") if char == "\\" else json_of(char))
    return "".join(out)


@pytest.mark.parametrize(("secret", "codes"), [
    ("x\\\\y-pass", [False, True]),
    ("x\\\\y-pass", [True, False]),
    ("\\\\\\\\Tok3n", [True, False, True, False]),
    ('q\\\\"-pass', [False, True]),  # the quote's own escaping backslash after the run
])
def test_a_run_of_backslashes_written_partly_as_two_and_partly_as_a_code_is_masked(secret: str,
                                                                                  codes: list[bool]) -> None:
    with only(secret):
        written = _mixed(secret, codes)
        assert redact(f"⟦{written}⟧") == f"⟦{MASK}⟧", written
        assert redact(f"⟦{json_of(written)}⟧") == f"⟦{MASK}⟧", written


@settings(max_examples=200)
@given(secret=secrets, data=st.data(), fences=st.lists(st.text(FENCES, min_size=1, max_size=3), min_size=2,
                                                        max_size=2))
def test_any_mix_of_escaped_and_coded_backslashes_is_masked(secret: str, data: st.DataObject,
                                                           fences: list[str]) -> None:
    codes = data.draw(st.lists(st.booleans(), min_size=secret.count("\\"), max_size=secret.count("\\")))
    written = data.draw(st.sampled_from([lambda s: s, json_of, lambda s: json_of(json_of(s))]))(_mixed(secret, codes))
    with only(secret):
        assert redact(f"{fences[0]}{written}{fences[1]}") == f"{fences[0]}{MASK}{fences[1]}", (secret, written)


def test_a_near_miss_three_times_over_full_of_backslashes_is_passed_over_at_once() -> None:
    for k in (10, 40, 80):
        secret = "\\" * k + "Tok3n-pass"
        with only(secret):
            redact("")  # builds the pattern: what is timed is the search alone
            for written in (THRICE["json three times"](secret), _mixed(secret, [i % 2 == 0 for i in range(k)])):
                near = written[:-1] + "X"
                started = time.perf_counter()
                assert redact(f"refused: {near} (retrying)") == f"refused: {near} (retrying)"
                assert time.perf_counter() - started < 0.25, k


DISCORD = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"


@pytest.mark.parametrize(("line", "masked"), [
    (f"Authorization: bot {DISCORD}", f"Authorization: bot {MASK}"),
    (f"authorization: BOT {DISCORD}", f"authorization: BOT {MASK}"),
    (f"the bot {DISCORD} logged in", f"the bot {MASK} logged in"),
    (json.dumps({"token": DISCORD}), json.dumps({"token": MASK})),
    (f"started bot 123456789:{'AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw'}", f"started bot {MASK}"),  # a Telegram one
])
def test_a_bot_token_after_bot_in_any_case_is_masked(line: str, masked: str) -> None:
    with only():
        assert redact(line) == masked


@pytest.mark.parametrize("line", [
    "a bot platforms.discord.adapter_for_guilds started",
    "module MTk4NjIyNDgzNDcxOTI1MjQ4.gateway.connection_established_ok",  # a last part of fewer than 27
    "module MTk4NjIyNDgzNDcxOTI1MjQ4.gateways.connection_established_okay",  # a middle part of neither 6 nor 7
    "xMTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",  # a word runs into it
])
def test_prose_and_dotted_names_near_a_discord_token_are_left(line: str) -> None:
    with only():
        assert redact(line) == line


def test_the_longest_spelling_bounds_what_a_spelling_three_times_over_matches() -> None:
    # The margin a cut text is masked past what it keeps is worked out from it.
    for secret in ['\\\\"é😀 x', "\\" * 5 + "y"]:
        for writer in THRICE.values():
            assert len(writer(secret)) <= log._longest_spelling(secret), (secret, writer)
