"""Masking secrets in log lines (`gateway.logging.redact`): seconds per line and per megabyte.

First a secret starting with ``k`` backslashes (k = 0 … 12) alone registered, with a line holding it as JSON
escapes it twice (a hit) and one holding that with its last character changed (a near miss, where every way of
matching the backslashes is tried before the engine gives up). Then, with ten secrets registered (a Telegram, a
Slack and an OpenAI token, passwords with punctuation, accents and a backslash), a log line of about 100
characters, microseconds per line. Then a line of a megabyte of log text with no secret registered, with the ten
and none of them in it, with a hundred of their forms in it (as written, JSON-escaped once and twice), and the
same as a JSON string. Each figure is the best of ``repeats`` runs, after the pattern was built; each line ends
with the masks the last run made, which a change meant only for speed must keep.

Run: .venv/bin/python bench/redact_bench.py [repeats] [largest k]
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gateway.logging as log  # noqa: E402
from bench.machine import describe  # noqa: E402

TEN_SECRETS = [
    "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "xoxb-2222-3333-abcdefABCDEF", "sk-proj-abcdefghijklmnop1234",
    "hunter2!", 'p@ss/w0rd"q', "MDEyOk9yZ2FuaXphdGlvbjE=", "whsec_ABCDEF123456", "s3cr3t\\webhook",
    "c0rrect horse", "zq9x-éàü-42",
]
WORDS = ("2026-11-30 12:00:00 INFO gateway.outbox: sent part 2/3 to chat 123456 in 0.31 s session=ab12 turn=7 "
         "WARNING platforms.telegram: retrying after 429 {\"ok\": false, \"error_code\": 429}").split()


def registered(secrets: Iterable[str]) -> None:
    """Only ``secrets`` registered, the pattern built."""
    log._secrets, log._secrets_re, log._longest = set(), None, 0
    for secret in secrets:
        log.register_secret(secret)
    log.redact("build the pattern")


def best(text: str, repeats: int) -> tuple[float, int]:
    fastest, masks = float("inf"), 0
    for _ in range(repeats):
        started = time.perf_counter()
        masked = log.redact(text)
        fastest = min(fastest, time.perf_counter() - started)
        masks = masked.count(log.MASK)
    return fastest, masks


def megabyte(forms: int) -> str:
    rnd = random.Random(7)
    words = [rnd.choice(WORDS) for _ in range(200_000)]
    text = " ".join(words)[:1_000_000]
    if not forms:
        return text
    step = len(text) // forms
    out = []
    for i in range(forms):
        secret = TEN_SECRETS[i % len(TEN_SECRETS)]
        written = (secret, json.dumps(secret)[1:-1], json.dumps(json.dumps(secret))[3:-3])[i % 3]
        out.append(f"{text[i * step:(i + 1) * step - len(written) - 2]} {written} ")
    return "".join(out)


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    largest = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    print(describe())
    print(" k  hit (s)   near miss (s)  masks")
    for k in range(largest + 1):
        secret = "\\" * k + "Tok3n-pass"
        registered([secret])
        written = json.dumps(json.dumps(secret))[3:-3]
        hit, hit_masks = best(f"refused: {written} (retrying)", repeats)
        miss, miss_masks = best(f"refused: {written[:-1]}X (retrying)", repeats)
        print(f"{k:2d}  {hit:.6f}  {miss:.6f}       {hit_masks}/{miss_masks}")
    registered(TEN_SECRETS)
    line = " ".join(WORDS[:14])
    started = time.perf_counter()
    for _ in range(10_000):
        log.redact(line)
    print(f"a line of {len(line)} characters, 10 registered: {(time.perf_counter() - started) * 100:.1f} µs")
    clean, dirty = megabyte(0), megabyte(100)
    for label, secrets, text in [
        ("1 MB, no secret registered", [], clean),
        ("1 MB, 10 registered, none in it", TEN_SECRETS, clean),
        ("1 MB, 10 registered, 100 forms in it", TEN_SECRETS, dirty),
        ("1 MB as a JSON string, 100 forms", TEN_SECRETS, json.dumps({"msg": dirty})),
    ]:
        registered(secrets)
        seconds, masks = best(text, repeats)
        print(f"{label:40s} {seconds * 1e6 / len(text):.4f} s/MB  masks {masks}")


if __name__ == "__main__":
    main()
