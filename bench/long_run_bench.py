"""Does anything grow without bound in a gateway that runs for weeks? Rounds of many chats, measured after each.

A real Gateway in this process, on the real OpenAI provider against the loopback `FakeOpenAIServer`, with the
real SDKs against the loopback fakes: Telegram (aiogram), Slack (Socket Mode), Discord (discord.py; its chats
delegate inline) and the web chat (its HTTP API). Each round, ``--chats`` new chats on each platform say five
things each, ``PARALLEL`` chats at a time, each waiting for its answer like a person:

1. a plain message;
2. a list of two, which the parent hands to two subagents (inline on Discord, in the background elsewhere:
   an acknowledgement, then the results);
3. a file with a caption (a document on Telegram, an attachment on Discord; plain text on Slack and the web);
4. a message the model does not answer (it hangs), then ``/stop`` in every other chat and another message,
   which interrupts it, in the rest;
5. ``/new``.

After each round, once the gateway has settled, the upkeep runs as if a week had passed (a `Retention` on a
clock eight days ahead, idle sessions let go at once; finished children swept with
``lifecycle.retention_seconds: 0``), what the fakes recorded of the round is dropped (their own growth, not
the gateway's), and the bench prints: resident memory, Python's live blocks, open fds, asyncio tasks alive,
sessions in memory (before the upkeep, and after), rows in each table of the state database and the WAL's
size, and the types that grew the most since the round before (gc; with ``--trace`` the source lines too,
by tracemalloc, slower). At the end: the containers that grew at each count since round 2 by a quarter of
a round's chats or more (where they hang), the fakes' left out. What keeps growing round after round, once
the first rounds have warmed caches and pools up and filled the bounded ones (discord.py keeps 1,000
messages, the adapters the latest 10,000 message ids), grows with the chats a gateway has met: a leak, unless
docs/gateway.md says it is kept (a session row per chat until ``/new`` or ``sessions.retention_days``, the
newest message seen per Slack or Discord conversation for 30 days). The fakes run in this process: their own
records (FakeDiscord's dispatched messages, FakeTelegram's) still grow the live blocks and lists counted.

Run: .venv/bin/python bench/long_run_bench.py [--rounds 5] [--chats 10] [--trace]
(the default, 5 rounds of 10 new chats on each of four platforms, 1,200 messages, takes 2 to 3 minutes on two
busy cores; ``--chats 500`` makes 12,000 messages a round)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402

import platforms.discord  # noqa: E402,F401  (first: imports discord.py without its audioop warning)
from agent import SYSTEM_CLOCK  # noqa: E402
from agent.testing import FakeOpenAIServer  # noqa: E402
from bench.machine import describe  # noqa: E402
from bench.memory_soak import census, containers, owner, resident  # noqa: E402
from gateway.app import Gateway  # noqa: E402
from gateway.config import config_from_mapping  # noqa: E402
from gateway.host import STATE_DB, AgentHost  # noqa: E402
from gateway.retention import Retention  # noqa: E402
from gateway.server import Server  # noqa: E402
from gateway.testing import settled  # noqa: E402
from platforms.base import Outbound, Sent  # noqa: E402
from platforms.discord import DiscordAdapter  # noqa: E402
from platforms.fakes.discord import FakeDiscord, Upload  # noqa: E402
from platforms.fakes.slack import FakeSlack  # noqa: E402
from platforms.fakes.telegram import FakeTelegram  # noqa: E402
from platforms.slack import SlackAdapter  # noqa: E402
from platforms.telegram import TelegramAdapter  # noqa: E402
from platforms.web import WebChatAdapter  # noqa: E402

PARALLEL = 40
WAIT = 60.0
"""Seconds a chat waits for one answer before the bench gives up: far beyond a loaded machine's."""
WEEK_AND_A_DAY = 8 * 24 * 3600.0
MARK = re.compile(r"\bk[tswd]\d+\b")
"""A chat's mark in what it says (``kt12``: Telegram's chat 12), which the model's answers repeat."""


# -- the model ---------------------------------------------------------------------------------------------------


def _text(content: object) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


async def model(body: dict) -> dict:
    """The parent echoes, hands a list to subagents and reports their results, and hangs on ``wait``; a child
    reports its goal done."""
    tools = {t.get("function", {}).get("name") for t in body.get("tools") or ()}
    last = body["messages"][-1]
    said = _text(last.get("content"))
    mark = next(iter(MARK.findall(said)), "")
    if "delegate_task" not in tools:
        goal = next(_text(m.get("content")) for m in body["messages"] if m.get("role") == "user")
        return {"text": f"done {' '.join(MARK.findall(goal))} {'apples' if 'apples' in goal else 'pears'}"}
    if last.get("role") == "tool":
        dispatched = '"dispatched"' in said
        return {"text": f"started {mark}" if dispatched else f"results {mark}"}
    if '"results"' in said:
        return {"text": f"results {mark}"}
    if said.startswith("compare"):
        tasks = [{"goal": f"{fruit} {mark}"} for fruit in ("apples", "pears")]
        return {"tool_calls": [{"name": "delegate_task", "arguments": json.dumps({"tasks": tasks})}]}
    if said.lstrip().startswith("wait") and "again" not in said:  # an interrupted message may lead the next one
        return {"hang": True}
    words = re.findall(r"\b(hello|file|again)\b", said)
    return {"text": f"re {words[0] if words else 'that'} {mark}"}


# -- the platforms ---------------------------------------------------------------------------------------------


class Chats:
    """One platform's chats, as their users see them."""

    letter: str

    def mark(self, chat: int) -> str:
        return f"k{self.letter}{chat}"

    async def say(self, chat: int, text: str) -> None:
        raise NotImplementedError

    async def send_file(self, chat: int, text: str) -> None:
        await self.say(chat, text)

    def texts(self, chat: int) -> list[str]:
        raise NotImplementedError

    async def wait_for(self, predicate: Callable[[], object]) -> None:
        raise NotImplementedError

    def forget(self) -> None:
        """Drop what the fake recorded of the round's chats."""

    async def close(self) -> None:
        pass

    async def answered(self, chat: int, *parts: str) -> None:
        try:
            await self.wait_for(lambda: any(all(p in t for p in parts) for t in self.texts(chat)))
        except TimeoutError:
            raise TimeoutError(f"{self.mark(chat)} never saw {parts} among {self.texts(chat)}") from None


class TelegramChats(Chats):
    letter = "t"

    async def start(self) -> tuple[dict, TelegramAdapter]:
        self.fake = await FakeTelegram().start()
        return {"allow_all": True}, TelegramAdapter(self.fake.token, api_base=self.fake.base_url, polling_timeout=10)

    def _id(self, chat: int) -> int:
        return 100_000 + chat

    async def say(self, chat: int, text: str) -> None:
        self.fake.push_message(self._id(chat), text)

    async def send_file(self, chat: int, text: str) -> None:
        self.fake.push_document(self._id(chat), b"some notes\n" * 20, "notes.txt", mime_type="text/plain",
                                caption=text)

    def texts(self, chat: int) -> list[str]:
        return [m.get("text") or m.get("caption") or "" for m in self.fake.messages.get(str(self._id(chat)), ())]

    async def wait_for(self, predicate: Callable[[], object]) -> None:
        await self.fake.wait_for(predicate, timeout=WAIT)

    def forget(self) -> None:
        for kept in (self.fake.messages, self.fake.said, self.fake.calls, self.fake.served, self.fake.files,
                     self.fake.downloads):
            kept.clear()

    async def close(self) -> None:
        await self.fake.close()


class SlackChats(Chats):
    letter = "s"

    async def start(self) -> tuple[dict, SlackAdapter]:
        self.fake = await FakeSlack().start()
        adapter = SlackAdapter(bot_token=self.fake.bot_token, app_token=self.fake.app_token,
                               api_base=self.fake.api_base)
        return {"allow_all": True}, adapter

    def _user(self, chat: int) -> str:
        return f"U{chat:06d}"

    async def say(self, chat: int, text: str) -> None:
        await self.fake.push_dm(self._user(chat), text)

    def texts(self, chat: int) -> list[str]:
        channel = self.fake.dm_channel(self._user(chat))
        return [m.get("text", "") for m in self.fake.messages.get((channel, None), []) if m.get("bot_id")]

    async def wait_for(self, predicate: Callable[[], object]) -> None:
        await self.fake.wait_for(predicate, timeout=WAIT)

    def forget(self) -> None:
        for kept in (self.fake.messages, self.fake.calls, self.fake.acks, self.fake.http_results):
            kept.clear()
        for key in [key for key, envelope in self.fake.envelopes.items() if envelope.acked]:
            del self.fake.envelopes[key]

    async def close(self) -> None:
        await self.fake.close()


class DiscordChats(Chats):
    letter = "d"

    async def start(self) -> tuple[dict, DiscordAdapter]:
        self.fake = await FakeDiscord().start()
        adapter = DiscordAdapter(self.fake.token, api_base=self.fake.api_base, client_factory=self.fake.client_factory)
        return {"allow_all": True}, adapter

    def _user(self, chat: int) -> str:
        return str(7_000_000 + chat)

    async def say(self, chat: int, text: str) -> None:
        self.fake.push_dm(self._user(chat), text)

    async def send_file(self, chat: int, text: str) -> None:
        self.fake.push_dm(self._user(chat), text, files=[Upload("notes.txt", b"some notes\n" * 20, "text/plain")])

    def texts(self, chat: int) -> list[str]:
        return [m.content for m in self.fake.bot_messages(self.fake.dm_channel(self._user(chat)))]

    async def wait_for(self, predicate: Callable[[], object]) -> None:
        await self.fake.wait_for(predicate, timeout=WAIT)

    def forget(self) -> None:
        for kept in (self.fake.messages, self.fake.calls, self.fake.attachment_data, self.fake.downloads,
                     self.fake.gateway_ops):
            kept.clear()

    async def close(self) -> None:
        await self.fake.close()


class WatchedWeb(WebChatAdapter):
    """The web chat, keeping what it publishes to each chat's pages for the bench to see."""

    def __init__(self) -> None:
        super().__init__()
        self.published: dict[str, list[str]] = collections.defaultdict(list)
        self.changed = asyncio.Event()

    async def send(self, message: Outbound) -> Sent:
        sent = await super().send(message)
        self.published[message.chat_id].append(message.text)
        self.changed.set()
        return sent


class WebChats(Chats):
    """POSTs to the web chat's API (no token: the page's anonymous user)."""

    letter = "w"

    async def start(self) -> tuple[dict, WebChatAdapter]:
        self.adapter = WatchedWeb()
        self.client = aiohttp.ClientSession()
        self._keys = iter(range(10**9))
        return {"enabled": True}, self.adapter

    async def say(self, chat: int, text: str) -> None:
        body = {"chat": f"w{chat}", "text": text, "key": f"bench-{next(self._keys):08d}"}
        async with self.client.post(f"{self.server.url}/chat/api/messages", json=body) as r:
            assert r.status == 202, await r.text()

    def texts(self, chat: int) -> list[str]:
        return self.adapter.published.get(f"w{chat}", [])

    async def wait_for(self, predicate: Callable[[], object]) -> None:
        async with asyncio.timeout(WAIT):
            while not predicate():
                self.adapter.changed.clear()
                await self.adapter.changed.wait()

    def forget(self) -> None:
        self.adapter.published.clear()

    async def close(self) -> None:
        await self.client.close()


# -- a chat's five messages --------------------------------------------------------------------------------------


async def converse(chats: Chats, openai: FakeOpenAIServer, chat: int) -> None:
    try:
        await say_five_things(chats, openai, chat)
    except TimeoutError as exc:
        mark = chats.mark(chat)
        asked = [(i, _text(r["messages"][-1].get("content"))[:60]) for i, r in enumerate(openai.requests)
                 if mark in json.dumps(r["messages"][-1])]
        raise TimeoutError(f"{exc}; the model was asked (request, last message): {asked}, "
                           f"of which dropped: {[i for i, _ in asked if i in openai.dropped]}") from None


async def say_five_things(chats: Chats, openai: FakeOpenAIServer, chat: int) -> None:
    mark = chats.mark(chat)
    await chats.say(chat, f"hello {mark}")
    await chats.answered(chat, f"re hello {mark}")
    await chats.say(chat, f"compare {mark}:\n- apples\n- pears")
    await chats.answered(chat, f"results {mark}")
    await chats.send_file(chat, f"file {mark}")
    await chats.answered(chat, f"re file {mark}")
    await chats.say(chat, f"wait {mark}")
    await openai.wait_for(lambda: any(f"wait {mark}" in json.dumps(r) for r in openai.requests[-PARALLEL * 4:]),
                          timeout=WAIT)
    if chat % 2:
        await chats.say(chat, f"again {mark}")
        await chats.answered(chat, f"re again {mark}")
    else:
        await chats.say(chat, "/stop")
        await chats.answered(chat, "Stopped")
    await chats.say(chat, "/new")
    await chats.answered(chat, "Started a new session")


async def run_round(platforms: list[Chats], openai: FakeOpenAIServer, first: int, count: int) -> None:
    work = iter([(p, first + i) for i in range(count) for p in platforms])

    async def person() -> None:
        for chats, chat in work:
            await converse(chats, openai, chat)

    await asyncio.gather(*(person() for _ in range(PARALLEL)))


# -- the figures -------------------------------------------------------------------------------------------------


class WeekAhead:
    """The system clock, eight days ahead: the upkeep forgets what a week's retention lets go."""

    def time(self) -> float:
        return time.time() + WEEK_AND_A_DAY

    def monotonic(self) -> float:
        return time.monotonic() + WEEK_AND_A_DAY

    async def sleep(self, seconds: float) -> None:
        await SYSTEM_CLOCK.sleep(seconds)


def rows(db: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as read:
        tables = [t for (t,) in read.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: read.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


async def measure(gateway: Gateway, upkeep: Retention, platforms: list[Chats], openai: FakeOpenAIServer,
                  db: Path) -> dict:
    await settled(gateway, timeout=120)
    in_memory = len(gateway.sessions)
    upkeep.sweep()
    await gateway.host.lifecycle.sweep()
    for chats in platforms:
        chats.forget()
    openai.requests.clear()
    openai.authorizations.clear()
    openai.dropped.clear()
    gc.collect()
    # Lengths only: holding the containers themselves would keep those the gateway has since let go alive.
    sizes = {key: n for key, (_, n) in containers().items()}
    wal = db.with_name(db.name + "-wal")
    return {"containers": sizes, "types": census(), "rss": resident(), "blocks": sys.getallocatedblocks(),
            "fds": len(os.listdir("/proc/self/fd")), "tasks": len(asyncio.all_tasks()), "in_memory": in_memory,
            "sessions": len(gateway.sessions), "rows": rows(db), "wal": wal.stat().st_size if wal.exists() else 0,
            "snapshot": tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None}


def holder(container: object) -> str:
    """`owner`, also for an attribute of an object whose ``__dict__`` gc does not list as its referrer (3.11's
    managed dicts)."""
    if not (where := owner(container)).startswith("a "):
        return where
    for attrs in gc.get_referrers(container):
        name = next((k for k, v in attrs.items() if v is container), None) if isinstance(attrs, dict) else None
        if name is not None:
            for obj in gc.get_objects():
                try:
                    if getattr(obj, "__dict__", None) is attrs:
                        return f"{type(obj).__module__}.{type(obj).__qualname__}.{name}"
                except Exception:  # a proxy's own attribute lookup
                    continue
    return where


def report(n: int, now: dict, before: dict | None, seconds: float, messages: int) -> None:
    print(f"round {n}: {messages} messages in {seconds:.0f} s; RSS {now['rss'] / 2**20:.1f} MB, "
          f"{now['blocks']} live blocks"
          + (f" ({now['blocks'] - before['blocks']:+d})" if before else "")
          + f", {now['fds']} fds, {now['tasks']} tasks, sessions in memory {now['in_memory']} -> {now['sessions']}"
          f" after the upkeep, WAL {now['wal'] / 1024:.0f} KiB")
    print("  rows: " + ", ".join(f"{t} {c}" for t, c in sorted(now["rows"].items()) if c))
    if before is None:
        return
    grown = (now["types"] - before["types"]).most_common(8)
    print("  types grown: " + (", ".join(f"{name} {d:+d}" for name, d in grown) or "none"))
    if now["snapshot"] is not None:
        ours = [tracemalloc.Filter(False, "*/platforms/fakes/*"), tracemalloc.Filter(False, "*/agent/testing/*"),
                tracemalloc.Filter(False, __file__), tracemalloc.Filter(False, "*/bench/memory_soak.py"),
                tracemalloc.Filter(False, tracemalloc.__file__)]
        diff = now["snapshot"].filter_traces(ours).compare_to(before["snapshot"].filter_traces(ours), "lineno")
        for stat in diff[:6]:
            frame = stat.traceback[0]
            print(f"    {stat.size_diff / 1024:+7.0f} KiB {stat.count_diff:+6d} blocks  "
                  f"{os.path.relpath(frame.filename)}:{frame.lineno}")


async def main(rounds: int, count: int, trace: bool) -> None:
    platforms: list[Chats] = [TelegramChats(), SlackChats(), DiscordChats(), WebChats()]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        openai = FakeOpenAIServer(api_key="sk-bench")
        openai.respond_with(model)
        await openai.start()
        sections, adapters = {}, []
        for chats, name in zip(platforms, ("telegram", "slack", "discord", "web")):
            section, adapter = await chats.start()
            sections[name] = section
            adapters.append(adapter)
        config = config_from_mapping({
            "state_dir": f"{tmp}/state", "agent": {"gateway_notify_interval": 0},
            "model": {"provider": "openai", "name": "fake-model", "base_url": openai.base_url, "api_key": "sk-bench"},
            "lifecycle": {"retention_seconds": 0}, "platforms": sections,
            "display": {"platforms": {"discord": {"interim_assistant_messages": False}}}}).config
        gateway = Gateway(AgentHost(config), adapters)
        server = Server(gateway, "127.0.0.1", 0)
        await gateway.start()
        await server.start()
        platforms[3].server = server
        upkeep = Retention(gateway.store, gateway.sessions, gateway.host.children, clock=WeekAhead(),
                           pay_owed=gateway.runner.pay_owed, idle_after=0.0)
        db = Path(tmp) / "state" / STATE_DB
        print(f"long run on {describe()}: {rounds} rounds of {count} new chats on each of {len(platforms)} platforms "
              f"(Telegram, Slack, Discord inline, web), 5 messages a chat, {PARALLEL} chats at a time; "
              f"started in {time.perf_counter() - began:.1f} s")
        if trace:
            tracemalloc.start(1)
        first = second = previous = before = None
        for n in range(1, rounds + 1):
            began = time.perf_counter()
            await run_round(platforms, openai, (n - 1) * count, count)
            now = await measure(gateway, upkeep, platforms, openai, db)
            report(n, now, before, time.perf_counter() - began, count * len(platforms) * 6)
            if before is not None:
                before["snapshot"] = None  # 300,000 traces and more: one kept at a time
            if n == 2 and rounds > 2:
                second = now
            first, previous, before = first or now, before or now, now
        tracemalloc.stop()
        # Round 1 still imports modules and fills caches and pools the first time a path is taken: from round 2.
        base = second or first
        mine = {id(v) for point in (first, second, previous, before) if point for v in point.values()}
        grown, new = [], []
        for key, (obj, size) in containers().items():
            was, then = base["containers"].get(key), previous["containers"].get(key, 0)
            if key in mine or size - (was or 0) < count * len(platforms) // 4:
                continue
            if not was:
                new.append((was, size, obj))
            elif was <= then <= size:  # at each of three counts: the id of one let go may name a newer one
                grown.append((was, size, obj))
        print(f"containers that kept growing, by {count * len(platforms) // 4} items or more since round "
              f"{2 if second else 1} (the fakes' left out):")
        for was, size, obj in grown:
            if not (where := holder(obj)).startswith("platforms.fakes"):
                print(f"  {was:7d} -> {size:7d}  {where}")
        # New ones are mostly caches' entries made anew (an aiogram message's fields, a pruned dict rebuilt).
        print(f"  and {len(new)} containers of as many items made since, the largest: " + ", ".join(
            f"{size} in {holder(obj)}" for _, size, obj in sorted(new, key=lambda n: -n[1])[:4]))
        stopping = time.perf_counter()
        await server.stop()
        await gateway.stop(grace=0)
        for chats in platforms:
            await chats.close()
        await openai.close()
        print(f"stopped in {time.perf_counter() - stopping:.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of new chats (default 5)")
    parser.add_argument("--chats", type=int, default=10, help="new chats per platform per round (default 10)")
    parser.add_argument("--trace", action="store_true", help="the heap's growth by source line too (slower)")
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.chats, options.trace))
