"""Memory and handle growth of a long-running gateway, per turn and per distinct chat.

A real Gateway with one platform and an instantly answering scripted model: the webhook platform
(signed POSTs, each reply delivered to a loopback receiver), the web chat (POSTs to its API) or
Telegram (the real aiogram client polling the loopback `FakeTelegram`). After a first tenth of the
turns and after the last, the gateway is let settle, every session and finished child is let go as
retention lets an idle or old one go (`Retention.sweep` with an idle time of 0, the lifecycle's
sweep with ``lifecycle.retention_seconds: 0``), and the live objects by type (gc), the containers
(dicts, sets, lists, deques), SQLite's own memory, the blocks Python's allocator holds live, the
resident memory, the open file descriptors and the pending asyncio tasks are counted; with
``--trace``, the heap by source line too (tracemalloc, which makes the turns about three times
slower). What is left then grows with the
chats the gateway has seen: anything beyond what docs/gateway.md says is kept is a leak.

Prints bytes per turn and per new chat between the two counts, the containers that grew by a
quarter of the new chats or more (the fake platform's own records left out), and the types (and
source lines) that grew the most (FakeTelegram's message-id counter per chat, ``count``, among them). The resident memory, also read halfway, is close to a high-water
mark: between two counts the sessions of the chats talking are in memory, as they are for an hour
in a running gateway, and memory freed at a count mostly stays with the process.

With ``--demo`` the offline demo model answers instead, and every fourth message is a list of two,
which it hands to two subagents (inline on Telegram, in the background on the web chat and
webhooks: a second message), so children, their cards and background deliveries are counted too.

Run: .venv/bin/python bench/memory_soak.py [--trace] [--demo] [webhook|web|telegram] [turns] [chats]
(defaults: 20,000 turns over 5,000 chats; Telegram 10,000, each turn two Bot API calls or more)
"""

from __future__ import annotations

import _sqlite3
import argparse
import asyncio
import collections
import ctypes
import gc
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from bench.instant_model import InstantModel  # noqa: E402
from bench.machine import describe  # noqa: E402
from gateway.app import Gateway  # noqa: E402
from gateway.config import config_from_mapping  # noqa: E402
from gateway.host import AgentHost  # noqa: E402
from gateway.server import Server  # noqa: E402
from gateway.testing import settled  # noqa: E402
from platforms.base import Outbound, Sent  # noqa: E402
from platforms.fakes.telegram import FakeTelegram  # noqa: E402
from platforms.telegram import TelegramAdapter  # noqa: E402
from platforms.web import WebChatAdapter  # noqa: E402
from platforms.webhook import WebhookAdapter  # noqa: E402
from platforms.webhook_signing import signed_headers  # noqa: E402

SECRET = "soak-secret"
PARALLEL = 50
DEFAULTS = {"webhook": (20_000, 5_000), "web": (20_000, 5_000), "telegram": (10_000, 5_000)}


class Replies:
    """Replies by key (a turn id, a chat), whichever comes first: the reply or the wait for it."""

    def __init__(self) -> None:
        self._arrived: set[str] = set()
        self._waiting: dict[str, asyncio.Future] = {}

    def arrived(self, key: str) -> None:
        if (future := self._waiting.pop(key, None)) is not None and not future.done():
            future.set_result(None)
        else:
            self._arrived.add(key)

    async def wait_for(self, key: str) -> None:
        if key in self._arrived:
            self._arrived.discard(key)
            return
        future = self._waiting.setdefault(key, asyncio.get_running_loop().create_future())
        await asyncio.wait_for(future, 30)


DEMO = False
"""``--demo``: the demo model, some messages delegating (`text`)."""


def gateway_config(tmp: str, **platforms) -> object:
    return config_from_mapping({"state_dir": f"{tmp}/state", "agent": {"gateway_notify_interval": 0},
                                "model": {"provider": "demo", "demo": {"child_steps": 1, "step_seconds": 0}},
                                # Finished children are kept an hour (documented); each count sweeps them first.
                                "lifecycle": {"retention_seconds": 0},
                                "platforms": platforms}).config


def model() -> InstantModel | None:
    return None if DEMO else InstantModel()


def text(i: int) -> str:
    return f"Compare these ({i}):\n- apples\n- pears" if DEMO and i % 4 == 0 else f"hello {i}"


class ServedSoak:
    """A gateway behind its HTTP server on loopback, and a client session to post to it."""

    async def serve(self, config, adapters: list) -> Gateway:
        self.gateway = Gateway(AgentHost(config, model=model()), adapters)
        self.server = Server(self.gateway, "127.0.0.1", 0)
        await self.gateway.start()
        await self.server.start()
        self.client = aiohttp.ClientSession()
        return self.gateway

    async def stop(self) -> None:
        await self.client.close()
        await self.server.stop()
        await self.gateway.stop(grace=0)


class WebhookSoak(ServedSoak):
    """Signed webhook POSTs; each reply is delivered to a receiver in this process."""

    async def start(self, tmp: str) -> Gateway:
        self.replies = Replies()
        app = web.Application()

        async def deliver(request: web.Request) -> web.Response:
            self.replies.arrived((await request.json())["turn_id"])
            return web.Response(status=200)

        app.router.add_post("/deliveries", deliver)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/deliveries"
        config = gateway_config(tmp, webhook={"enabled": True, "routes": {"soak": {"secret": SECRET,
                                                                                  "deliver_url": url}}})
        return await self.serve(config, [WebhookAdapter({"soak": (SECRET, url)})])

    async def turn(self, i: int, chat: str) -> None:
        body = json.dumps({"text": text(i), "chat_id": chat}).encode()
        async with self.client.post(f"{self.server.url}/webhooks/soak", data=body,
                                    headers=signed_headers(SECRET, body, now=time.time())) as r:
            turn = (await r.json())["turn_id"]
        await self.replies.wait_for(turn)

    async def stop(self) -> None:
        await super().stop()
        await self.runner.cleanup()


class WatchedWeb(WebChatAdapter):
    """The web chat, telling the bench of each reply it publishes to the chat's pages."""

    def __init__(self, replies: Replies, **kw) -> None:
        super().__init__(**kw)
        self.replies = replies

    async def send(self, message: Outbound) -> Sent:
        sent = await super().send(message)
        self.replies.arrived(message.chat_id)
        return sent


class WebSoak(ServedSoak):
    """POSTs to the web chat's API on loopback (no token: the page's anonymous user)."""

    async def start(self, tmp: str) -> Gateway:
        self.replies = Replies()
        config = gateway_config(tmp, web={"enabled": True})
        return await self.serve(config, [WatchedWeb(self.replies)])

    async def turn(self, i: int, chat: str) -> None:
        body = {"chat": chat, "text": text(i), "key": f"soak-key-{i}"}
        async with self.client.post(f"{self.server.url}/chat/api/messages", json=body) as r:
            assert r.status == 202, await r.text()
        await self.replies.wait_for(chat)


class TelegramSoak:
    """The real aiogram client polling the loopback fake Bot API; each chat a private chat."""

    async def start(self, tmp: str) -> Gateway:
        self.fake = await FakeTelegram().start()
        config = gateway_config(tmp, telegram={"allow_all": True})
        adapter = TelegramAdapter(self.fake.token, api_base=self.fake.base_url, polling_timeout=10)
        self.gateway = Gateway(AgentHost(config, model=model()), [adapter])
        await self.gateway.start()
        return self.gateway

    async def turn(self, i: int, chat: str) -> None:
        chat_id = 100_000 + int(chat.removeprefix("chat-"))
        had = len(self.fake.messages.get(str(chat_id), ()))
        self.fake.push_message(chat_id, text(i))
        await self.fake.wait_for(lambda: len(self.fake.messages[str(chat_id)]) > had, timeout=30)
        # What the fake records of each call and message is its own growth, not the gateway's.
        del self.fake.messages[str(chat_id)]
        self.fake.calls.clear()
        self.fake.served.clear()

    async def stop(self) -> None:
        await self.gateway.stop(grace=0)
        await self.fake.close()


async def drive(soak, turns: range, chats: int) -> None:
    """Turn ``i`` is sent by chat ``i % chats``; ``PARALLEL`` chats talk at a time, each waiting
    for its reply before its next message, like a person."""
    queue = iter(turns)

    async def worker() -> None:
        for i in queue:
            await soak.turn(i, f"chat-{i % chats}")

    await asyncio.gather(*(worker() for _ in range(PARALLEL)))


async def settle(gateway: Gateway) -> None:
    """Let every session and finished child go, as retention lets an idle or old one go."""
    await settled(gateway, timeout=60)
    gateway.retention.idle_after = 0.0
    gateway.retention.sweep()
    await gateway.host.lifecycle.sweep()
    gc.collect()


def census() -> collections.Counter:
    return collections.Counter(type(o).__qualname__ for o in gc.get_objects())


def containers() -> dict[int, tuple[object, int]]:
    """Every dict, set, list or deque of 50 items or more: id -> (the object, its length)."""
    kinds = (dict, set, list, collections.deque, collections.OrderedDict)
    return {id(o): (o, len(o)) for o in gc.get_objects() if isinstance(o, kinds) and len(o) >= 50}


def owner(container: object) -> str:
    """Where a container hangs: ``module.Class.attribute`` of the object whose attribute it is, or
    ``module.name`` for a module's global."""
    for ref in gc.get_referrers(container):
        attrs = ref if isinstance(ref, dict) else getattr(ref, "__dict__", None)
        if not isinstance(attrs, dict):
            continue
        name = next((k for k, v in attrs.items() if v is container), None)
        if name is None:
            continue
        if attrs is not ref:
            return f"{type(ref).__module__}.{type(ref).__qualname__}.{name}"
        for holder in gc.get_referrers(ref):
            if getattr(holder, "__dict__", None) is ref:
                return f"{type(holder).__module__}.{type(holder).__qualname__}.{name}"
        if "__name__" in ref:
            return f"{ref['__name__']}.{name}"
    return f"a {type(container).__name__} held elsewhere"


_sqlite_memory_used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
_sqlite_memory_used.restype = ctypes.c_int64


def resident() -> int:
    """Bytes of the process in memory now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def point(gateway: Gateway) -> dict:
    await settle(gateway)
    found = containers()  # before the census, whose Counter is no container of the gateway's
    snapshot = tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None
    return {"containers": found, "snapshot": snapshot, "types": census(), "rss": resident(),
            "sqlite": _sqlite_memory_used(), "blocks": sys.getallocatedblocks(),
            "fds": len(os.listdir("/proc/self/fd")), "tasks": len(asyncio.all_tasks()),
            "sessions": len(gateway.sessions._sessions)}


async def main(platform: str, turns: int, chats: int, trace: bool) -> None:
    soak = {"webhook": WebhookSoak, "web": WebSoak, "telegram": TelegramSoak}[platform]()
    with tempfile.TemporaryDirectory() as tmp:
        gateway = await soak.start(tmp)
        first = turns // 10
        began = time.perf_counter()
        if trace:
            tracemalloc.start(1)
        # The first tenth of the turns, each from a chat not seen before (as many as there are).
        await drive(soak, range(first), chats)
        before = await point(gateway)
        middle = (first + turns) // 2
        await drive(soak, range(first, middle), chats)
        halfway = resident()  # the second half alone: what still grows once the allocator has warmed up
        await drive(soak, range(middle, turns), chats)
        after = await point(gateway)
        elapsed = time.perf_counter() - began
        await soak.stop()
    tracemalloc.stop()

    new_chats = chats - min(first, chats)
    grown = []
    if trace:
        ours = [tracemalloc.Filter(False, "*/platforms/fakes/*"), tracemalloc.Filter(False, __file__)]
        grown = after["snapshot"].filter_traces(ours).compare_to(before["snapshot"].filter_traces(ours), "lineno")
    print(f"memory soak on {describe()}: {turns} {platform} turns over {chats} chats ({PARALLEL} at a time), "
          f"{'demo model, a list every 4th message' if DEMO else 'instant scripted model'}, {elapsed:.0f} s; every session let go before each count")
    print(f"  after turn {first}: {before['sessions']} sessions in memory, {before['fds']} fds, {before['tasks']} tasks")
    print(f"  after turn {turns}: {after['sessions']} sessions in memory, {after['fds']} fds, {after['tasks']} tasks")
    print(f"  resident memory grew {(halfway - before['rss']) / 1024:.0f} KiB over turns {first}-{middle}, "
          f"{(after['rss'] - halfway) / 1024:.0f} KiB over turns {middle}-{turns}")
    # Resident memory keeps what the sessions of the chats talking held between counts (conversations grow with
    # each turn, up to the model's context window); the blocks Python still holds after the count are what is kept.
    blocks = after["blocks"] - before["blocks"]
    print(f"  Python's live allocations grew {blocks:+d} blocks over {turns - first} turns and {new_chats} new chats: "
          f"{blocks / (turns - first):+.3f}/turn")
    for what, grew in [("resident memory", after["rss"] - before["rss"]),
                       ("SQLite's memory (page caches: bounded)", after["sqlite"] - before["sqlite"])] + (
            [("heap (tracemalloc)", sum(s.size_diff for s in grown))] if trace else []):
        print(f"  {what} grew {grew / 1024:.0f} KiB over {turns - first} turns and {new_chats} new chats: "
              f"{grew / (turns - first):.1f} B/turn, {grew / max(new_chats, 1):.1f} B/new chat")
    print("  types that grew the most (count after - before):")
    for name, n in (after["types"] - before["types"]).most_common(12):
        print(f"    {n:+8d}  {name}")
    print(f"  containers that grew by {new_chats // 4} items or more (a quarter of the new chats):")
    mine = {id(v) for v in (*before.values(), *after.values())}
    for key, (obj, n) in after["containers"].items():
        if key in mine:
            continue
        was = before["containers"].get(key, (None, 0))[1]
        if n - was >= new_chats // 4 and not (where := owner(obj)).startswith("platforms.fakes"):
            print(f"    {was:7d} -> {n:7d}  {where}")
    if trace:
        print("  allocation sites that grew the most:")
    for stat in grown[:12]:  # empty without --trace
        frame = stat.traceback[0]
        print(f"    {stat.size_diff / 1024:+8.0f} KiB {stat.count_diff:+7d} blocks  "
              f"{os.path.relpath(frame.filename)}:{frame.lineno}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("platform", nargs="?", choices=sorted(DEFAULTS), default="webhook")
    parser.add_argument("turns", nargs="?", type=int, help="turns in all (default: 20,000; Telegram 10,000)")
    parser.add_argument("chats", nargs="?", type=int, help="distinct chats (default: 5,000)")
    parser.add_argument("--trace", action="store_true", help="the heap by source line too (about 3x slower)")
    parser.add_argument("--demo", action="store_true", help="the offline demo model, with children and deliveries")
    options = parser.parse_args()
    DEMO = options.demo
    turns, chats = DEFAULTS[options.platform]
    asyncio.run(main(options.platform, options.turns or turns, options.chats or chats, trace=options.trace))
