"""How long journaling a long answer holds the event loop (brief: a plugin command answering 10 MB held every chat).

A text of `SIZE` megabytes, past Telegram's bound of parts, is journaled by an outbox with the real aiogram client
against `FakeTelegram` while a ticker task sleeps a millisecond at a time; prints, per way of journaling it, how
long the call took and the longest gap between two ticks (what every other chat waited):

- ``enqueue``: split and ``answer.md`` written on the loop (what a built-in command's answer takes);
- ``enqueue_long``: both in a worker thread (a model's reply, `send_message`, a plugin command's answer).

Then the split of a start of a text of `SIZE` MB holding one code block and a link definition after it
(`gateway.long_messages.split_bounded`), against the same text without the definition.

Run: .venv/bin/python bench/long_answer_loop_stall.py [--megabytes 10]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.testing import FakeClock  # noqa: E402
from bench.machine import describe  # noqa: E402
from gateway.long_messages import split_bounded  # noqa: E402
from gateway.outbox import Outbox  # noqa: E402
from gateway.outbox_files import OutboxFiles  # noqa: E402
from gateway.splitting import safe_measure  # noqa: E402
from gateway.store import GatewayStore  # noqa: E402
from platforms.fakes.telegram import FakeTelegram  # noqa: E402
from platforms.telegram import TelegramAdapter  # noqa: E402
from tests.platforms.sink import Sink  # noqa: E402

SIZE = 10


async def _ticks(gaps: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    last = loop.time()
    while not stop.is_set():
        await asyncio.sleep(0.001)
        now = loop.time()
        gaps.append(now - last)
        last = now


async def _timed(journal) -> tuple[float, float]:
    """Milliseconds ``journal()`` took, and the longest the loop went without a tick meanwhile."""
    gaps: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.ensure_future(_ticks(gaps, stop))
    await asyncio.sleep(0.02)
    gaps.clear()
    started = time.perf_counter()
    result = journal()
    if asyncio.iscoroutine(result):
        await result
    took = time.perf_counter() - started
    await asyncio.sleep(0.02)
    stop.set()
    await ticker
    return took * 1000, max(gaps) * 1000


async def journaling(megabytes: int) -> None:
    text = "\n\n".join(f"Paragraph {n}: " + "word " * 16 for n in range(megabytes * 1_000_000 // 100))
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        await adapter.start(Sink())
        with tempfile.TemporaryDirectory() as folder:
            store = GatewayStore(Path(folder) / "state.db", clock=FakeClock())
            outbox = Outbox(store.outbox, {"telegram": adapter}, files=OutboxFiles(Path(folder) / "files"))
            try:
                ways = {
                    "enqueue": lambda: outbox.enqueue("telegram", "42", None, text, kind="command", key="a"),
                    "enqueue_long": lambda: outbox.enqueue_long("telegram", "42", None, text, kind="reply",
                                                                key="b"),
                }
                for name, journal in ways.items():
                    took, stall = await _timed(journal)
                    print(f"{name:>13}: {took:6.0f} ms, the loop held at most {stall:4.0f} ms")
            finally:
                await outbox.close()
                store.close()
        await adapter.stop()


def late_definition(megabytes: int) -> None:
    adapter = TelegramAdapter("1:x", api_base="http://127.0.0.1:9")
    measure = safe_measure(adapter)
    code = "\n".join(f"row[{n}]: value = {n}" for n in range(megabytes * 1_000_000 // 27))
    warm = "See [a].\n\nx\n\n[a]: https://example.com/a\n" * 2000
    split_bounded(warm, adapter.text_limit, measure, 16)
    for name, end in (("no definition", ""), ("definition", "[d]: https://example.com/docs\n")):
        text = f"See [the docs][d].\n\n```\n{code}\n```\n\n{end}"
        started = time.perf_counter()
        split_bounded(text, adapter.text_limit, measure, 16)
        print(f"split_bounded, {len(text) / 1e6:.1f} MB, code then {name}: "
              f"{(time.perf_counter() - started) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--megabytes", type=int, default=SIZE, help=f"size of the answer (default {SIZE})")
    megabytes = parser.parse_args().megabytes
    print(describe())
    asyncio.run(journaling(megabytes))
    late_definition(megabytes)


if __name__ == "__main__":
    main()
