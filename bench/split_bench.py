"""Splitting a long reply heavy with formatting, per platform (issue: split speed).

A reply of ~30 KB as a model writes one (headings, lists, bold, italic and code spans,
links, a code block, a table) is split with each adapter's own ``measure``, as
`Outbox.enqueue` does; prints the parts, the milliseconds per split and the calls of
``measure`` per split for Telegram, Slack and Discord, and the same for the largest
reply a model can send (`LARGEST`, about 130 KB: 32,000 output tokens of such text).
Then the same for a reply written as one long paragraph (`one_paragraph`: no blank line,
every line formatted), whose every candidate part ends in that paragraph, up to 200 KB.
Then long tables, split once each (seconds, parts): 200 rows of 200 one-character columns
(`wide_table`, about 80 KB, a list per row, each row's list about a Discord message), 50 columns of
what models write in cells (`long_table`, about 130 KB) and 3 aligned columns (`narrow_table`); and
about 100 KB of paragraphs each a strikethrough holding one at every word (`nested_strikes`, each longer than a
part: every cut is inside both, and each candidate cut looks up the styles open there).
Each split starts with nothing of its reply rendered before, in a process whose garbage
collector is tuned as the gateway's (`gateway.gc_tuning`).

Each line ends with a digest of the parts: a change meant only to make splitting faster must leave
every digest as it was (run the bench before and after).

Run: .venv/bin/python bench/split_bench.py [repeats]
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import describe  # noqa: E402
from gateway.gc_tuning import tune_for_serving  # noqa: E402
from gateway.splitting import safe_measure, split_text  # noqa: E402
from platforms.discord import DiscordAdapter  # noqa: E402
from platforms.formatting import inline_lines, markdown, tables  # noqa: E402
from platforms.slack import SlackAdapter  # noqa: E402
from platforms.telegram import TelegramAdapter  # noqa: E402

LARGEST = 130_000
"""Characters of the longest reply: 32k output tokens at about four characters each."""


def section(i: int) -> str:
    return f"""## Step {i}: **configure** the `service-{i}` _carefully_

The **first** thing to check is the *timeout* of `client.connect()`: see [the docs](https://example.com/docs/{i})
and [the FAQ](https://example.com/faq#{i}). A ~~wrong~~ **right** value is _between_ `5` and `30` seconds, and
**never** `0` — that one *blocks* for ever. Keep `retries=3` unless the [status page](https://status.example.com)
says otherwise, and read https://example.com/changelog/{i} first.

- **Option A**: set `timeout=10` in *config.yaml* ([details](https://example.com/a/{i}))
- **Option B**: pass `--timeout 10` on the _command line_
  - nested: `export TIMEOUT=10` for **every** shell
- ~~Option C~~: *deprecated* since `v{i}.0`

1. Stop the service with `systemctl stop svc-{i}`
2. Edit **/etc/svc/{i}.conf** and set `timeout`
3. Start it again and check `journalctl -u svc-{i}`

```python
def connect(host: str, port: int = {8000 + i}) -> Client:
    client = Client(host, port, timeout=10)
    for attempt in range(3):
        if client.ping():
            return client
    raise ConnectionError(f"no answer from {{host}}:{{port}}")
```

| setting | default | **recommended** | note |
|---|---|---|---|
| `timeout` | 0 | 10 | *seconds* |
| `retries` | 1 | 3 | [why](https://example.com/why/{i}) |
| `backoff` | none | exponential | ~~linear~~ |

> **Note:** the _first_ start after an upgrade takes longer; `svc-{i}` migrates its data.

"""


def reply(size: int) -> str:
    parts: list[str] = []
    i = 0
    while sum(map(len, parts)) < size:
        i += 1
        parts.append(section(i))
    return "".join(parts)[:size].rsplit("\n\n", 1)[0] + "\n"


def one_paragraph(size: int) -> str:
    lines: list[str] = []
    while sum(map(len, lines)) < size:
        i = len(lines) + 1
        lines.append(f"Line {i}: the **first** thing is the *timeout* of `client.connect({i})`, see "
                     f"[docs](https://example.com/d/{i}) and ~~old~~ _new_ values.")
    return "\n".join(lines) + "\n"


_CELLS = ("`timeout`", "**10 s**", "retries", "[docs](https://example.com/d)", "_seconds_", "~~0~~", "3", "none")


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = [header, ["---"] * len(header), *rows]
    return "".join("| " + " | ".join(line) + " |\n" for line in lines)


def wide_table(rows: int = 200, columns: int = 200) -> str:
    lines = [[f"col{c}" for c in range(columns)], ["-"] * columns,
             *([str((r * 7 + c) % 10) for c in range(columns)] for r in range(rows))]
    return "".join("|" + "|".join(line) + "|\n" for line in lines)


def long_table(size: int, columns: int = 50) -> str:
    header = [f"setting {c}" for c in range(columns)]
    rows: list[list[str]] = []
    while len(table(header, rows)) < size:
        r = len(rows)
        rows.append([f"{_CELLS[(r + c) % len(_CELLS)]} {r}" for c in range(columns)])
    return table(header, rows[:-1])


def narrow_table(size: int) -> str:
    rows: list[list[str]] = []
    while len(table(["setting", "default", "note"], rows)) < size:
        r = len(rows)
        rows.append([f"`key_{r}`", _CELLS[r % len(_CELLS)], f"*note* {r}"])
    return table(["setting", "default", "note"], rows[:-1])


def nested_strikes(size: int) -> str:
    paragraphs: list[str] = []
    while sum(map(len, paragraphs)) < size:
        paragraphs.append(f"~~Note {len(paragraphs) + 1}: " + " ".join("~~ab~~" for _ in range(700)) + " done~~")
    return "\n\n".join(paragraphs)


def digest(parts: list[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:12]


def forget() -> None:
    """Nothing of a reply rendered before: each reply is new."""
    for cached in (markdown._top_level, markdown._piece, markdown._remembered_cell_text,
                   markdown._remembered_list_line, tables._remembered_shape, inline_lines._closed, inline_lines._parsed):
        cached.cache_clear()


def counted(measure: Callable[[str], int]) -> tuple[Callable[[str], int], list[int]]:
    calls = [0]

    def wrapped(text: str) -> int:
        calls[0] += 1
        return measure(text)

    return wrapped, calls


def adapters() -> list[tuple[str, object]]:
    return [
        ("telegram", TelegramAdapter("123456:bench-token")),
        ("slack", SlackAdapter(bot_token="xoxb-bench", mode="http", signing_secret="s")),
        ("discord", DiscordAdapter("bench-token")),
    ]


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    tune_for_serving()
    print(f"split_bench on {describe()}")
    print(f"{'reply':<13} {'platform':<9} {'chars':>7} {'parts':>5} {'ms/split':>9} {'calls/split':>11} {'ms/call':>8} "
          f"{'digest':>12}")
    for kind, make, sizes in (("sections", reply, (30_000, LARGEST)),
                              ("one paragraph", one_paragraph, (30_000, LARGEST, 200_000))):
        for size in sizes:
            text = make(size)
            for name, adapter in adapters():
                measure, calls = counted(safe_measure(adapter))  # type: ignore[arg-type]
                limit = adapter.text_limit  # type: ignore[attr-defined]
                times = []
                for _ in range(repeats):
                    forget()
                    calls[0] = 0
                    started = time.perf_counter()
                    parts = split_text(text, limit, measure)
                    times.append(time.perf_counter() - started)
                best = min(times) * 1000
                print(f"{kind:<13} {name:<9} {len(text):>7} {len(parts):>5} {best:>9.1f} {calls[0]:>11} "
                      f"{best / calls[0]:>8.2f} {digest(parts):>12}")
    print(f"{'table':<13} {'platform':<9} {'chars':>7} {'parts':>5} {'s/split':>9} {'calls/split':>11} {'ms/call':>8} "
          f"{'digest':>12}")
    for kind, text in (("200x200", wide_table()), ("50 columns", long_table(LARGEST)),
                       ("3 columns", narrow_table(LARGEST)), ("nested ~~", nested_strikes(100_000))):
        for name, adapter in adapters():
            measure, calls = counted(safe_measure(adapter))  # type: ignore[arg-type]
            forget()
            started = time.perf_counter()
            parts = split_text(text, adapter.text_limit, measure)  # type: ignore[attr-defined]
            took = time.perf_counter() - started
            print(f"{kind:<13} {name:<9} {len(text):>7} {len(parts):>5} {took:>9.2f} {calls[0]:>11} "
                  f"{took * 1000 / calls[0]:>8.2f} {digest(parts):>12}", flush=True)


if __name__ == "__main__":
    main()
