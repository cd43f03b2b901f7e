"""A registered secret is masked in every form a JSON string, a repr or a URL writes it in, once or twice over,
whatever characters it holds, and nothing around it is touched; one holding backslashes costs no more to look for
than another (a near miss of one with twelve of them held a logging thread ten seconds or more, each near miss);
the token shapes mask what they did before they were made quick."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import time
from collections.abc import Callable, Iterator
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gateway.logging as log
from gateway.config import config_secrets, load_config
from gateway.logging import MASK, logging_installed, redact, register_secret

FENCES = "⟦⟧ぁあ"
"""Characters no secret here holds: no spelling of one reaches into them, so all of them must be left as they are."""


@contextlib.contextmanager
def only(*secrets: str) -> Iterator[None]:
    """Only ``secrets`` registered inside the block, the registry as it was after: one example's secrets would
    otherwise slow, and mask text of, every later one."""
    saved = log._secrets, log._longest, log._secrets_re
    log._secrets, log._longest, log._secrets_re = set(), 0, None
    try:
        for secret in secrets:
            register_secret(secret)
        yield
    finally:
        log._secrets, log._longest, log._secrets_re = saved


def json_of(text: str, *, ascii_only: bool = True) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


def repr_of(text: str) -> str:
    return repr(text)[1:-1]


WRITERS: dict[str, Callable[[str], str]] = {
    "as is": lambda s: s,
    "json": json_of,
    "json utf-8": lambda s: json_of(s, ascii_only=False),
    "repr": repr_of,
    "json twice": lambda s: json_of(json_of(s)),
    "json utf-8 twice": lambda s: json_of(json_of(s, ascii_only=False), ascii_only=False),
    "repr of json": lambda s: repr_of(json_of(s)),
    "json of repr": lambda s: json_of(repr_of(s)),
    "repr twice": lambda s: repr_of(repr_of(s)),
    "url": lambda s: quote(s, safe=""),
    "url twice": lambda s: quote(quote(s, safe=""), safe=""),
    "form": quote_plus,
}

secrets = st.lists(
    st.one_of(st.sampled_from(["\\", "\\\\\\", '"', "'", "/", " ", "%", "+", "&", "é", "😀", "\t", "\n", "\x08", "\x85",
                               "\u200b", "\U000e0041", "u", "x", "5", "c"]),
              st.characters(blacklist_categories=("Cs",), blacklist_characters=FENCES)),
    min_size=4, max_size=20).map("".join)


@settings(max_examples=200)  # each example builds a pattern of its own
@given(secret=secrets, writer=st.sampled_from(sorted(WRITERS)),
       fences=st.lists(st.text(FENCES, min_size=1, max_size=3), min_size=3, max_size=3))
def test_every_written_form_of_a_secret_is_masked_and_nothing_else(secret: str, writer: str,
                                                                   fences: list[str]) -> None:
    form = WRITERS[writer](secret)
    with only(secret):
        masked = redact(f"{fences[0]}{form}{fences[1]}{form}{fences[2]}")
    assert masked == f"{fences[0]}{MASK}{fences[1]}{MASK}{fences[2]}", (secret, form)


@pytest.mark.parametrize("writer", [repr_of, lambda s: json_of(repr_of(s)), lambda s: repr_of(repr_of(s))],
                         ids=["repr", "json of repr", "repr twice"])
def test_a_control_character_a_repr_writes_as_x_though_json_has_a_short_escape_for_it_is_masked(writer) -> None:
    secret = "bs\x08ff\x0c-pass-7d1"  # JSON writes \b and \f, a repr \x08 and \x0c
    with only(secret):
        assert redact(f"refused: '{writer(secret)}'") == f"refused: '{MASK}'"


@pytest.mark.parametrize("shape", [lambda k: "\\" * k + "Tok3n-pass", lambda k: "p" + "\\\\/" * (k // 2) + "q"],
                         ids=["leading backslashes", "runs of two"])
def test_a_near_miss_of_a_secret_full_of_backslashes_is_passed_over_at_once(shape) -> None:
    for k in (10, 20, 40, 80):
        secret = shape(k)
        with only(secret):
            redact("")  # builds the pattern: what is timed is the search alone
            for written in (json_of(json_of(secret)), repr_of(json_of(secret)), secret):
                near = written[:-1] + "X"
                started = time.perf_counter()
                assert redact(f"refused: {near} (retrying)") == f"refused: {near} (retrying)"
                # Each once tried every way of sharing out the backslashes: 2.6 s for k = 10, 4 times more a step.
                assert time.perf_counter() - started < 0.25, k


REFERENCE_SHAPES = [
    (re.compile(r"\b((?i:bearer)[ \t]+)[A-Za-z0-9._~+/=-]{20,}"), r"\1" + MASK),
    (re.compile(r"\b(Bot[ \t]+)[A-Za-z0-9._~+/=-]{20,}"), r"\1" + MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), MASK),
    (re.compile(r"(?:(?<![\w-])|(?<=bot))[0-9]+(?::|%3[Aa]|%253[Aa]|\\{1,2}u003[Aa])[A-Za-z0-9_-]{30,}"), MASK),
    (re.compile(r"(?<![\w.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}"), MASK),
    (re.compile(r"\bx(?:ox[abepr]|oxe\.xox[abpr]|app)-[A-Za-z0-9-]{8,}"), MASK),
]
"""The token shapes as the log documents them: a word boundary, then the token."""

pieces = st.sampled_from(["Bearer ", "bearer", "BEARER\t", "Bot ", "bot", "sk-", "xoxb-", "xapp-", "xoxq-", "xoxe",
                          "xoxe.", "123", "9", ":", "%3A", "%3a", "%253a", "\\u003A", "\\", "_", "-", " ", "\t",
                          "a", "Z", "é", "/", "=", ".", "\n", "A" * 8, "b7" * 8, "Q" * 30,
                          "MTk4NjIyNDgzNDcxOTI1MjQ4", ".Cl2FMQ."])


@settings(max_examples=400)
@given(st.lists(pieces, max_size=30).map("".join))
def test_token_shapes_mask_what_their_documented_patterns_match(text: str) -> None:
    expected = text
    for regex, replacement in REFERENCE_SHAPES:
        expected = regex.sub(replacement, expected)
    with only():
        assert redact(text) == expected


def test_secrets_of_a_configuration_loaded_again_are_masked_as_the_new_logging_starts(tmp_path) -> None:
    """A configuration loaded anew (another run of the CLI in the same process, a test) registers its platforms'
    tokens and secrets with its logging: lines logged after mask them, and those of the first still."""
    stream = io.StringIO()
    with only():
        for token, route in [("777001:AAE-first-token-x1", "route-secret-first-1"),
                             ("777002:AAE-second-token-x2", "route-secret-second-2")]:
            path = tmp_path / "switchboard.yaml"
            path.write_text(f"platforms:\n  telegram: {{enabled: true, allow_all: true, token: '{token}'}}\n"
                            f"  webhook: {{enabled: true, routes: {{a: {{secret: {route}}}}}}}\n", encoding="utf-8")
            config, _ = load_config(path, env={})
            with logging_installed("INFO", stream=stream, secrets=config_secrets(config), repeat_window=0):
                logging.getLogger("platforms.test").warning(
                    "tokens %s %s %s", json.dumps({"t": token}), quote(route), "777001:AAE-first-token-x1")
    out = stream.getvalue()
    assert out.count(MASK) == 6, out
    assert "token-x" not in out and "route-secret" not in out


@pytest.mark.parametrize("writer", ["json twice", "repr of json", "json of repr", "repr twice"])
def test_a_secret_whose_spelling_starts_another_longer_ones_leaves_none_of_that_one_to_show(writer: str) -> None:
    """The secrets' pattern tries the longest secret first: ``a\\\\\\\\bcdQ`` (nine characters) before ``a\\bcdQRS``
    (eight), whose form escaped twice starts with the first as written, and whose ``RS`` was left to show."""
    longer, shorter = "a\\bcdQRS", "a" + "\\" * 4 + "bcdQ"
    with only(longer, shorter):
        assert redact(f"⟦{WRITERS[writer](longer)}⟧") == f"⟦{MASK}⟧"
        assert redact(f"⟦{shorter}⟧ ⟦{WRITERS[writer](shorter)}⟧") == f"⟦{MASK}⟧ ⟦{MASK}⟧"


@settings(max_examples=200)  # each example builds a pattern of its own
@given(secret=secrets, writer=st.sampled_from(sorted(WRITERS)), data=st.data())
def test_a_registered_start_of_a_secrets_written_form_leaves_none_of_it_to_show(secret: str, writer: str,
                                                                                data: st.DataObject) -> None:
    form = WRITERS[writer](secret)
    if len(form) < 5:
        return
    start = form[:data.draw(st.integers(4, len(form) - 1))]
    with only(secret, start):
        assert redact(f"⟦{form}⟧") == f"⟦{MASK}⟧", (secret, form, start)
