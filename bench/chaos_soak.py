"""A long chaos soak of `switchboard run` (local only, never in CI: tests/scenarios/test_restart_chaos.py
is its short cousin): Telegram polling, a webhook route and optionally Slack Socket Mode and Discord
(DMs, and guild channels where users mention the bot or chat among themselves) against the loopback
fakes, and the web chat's API as its page uses it (each message posted under its own key until taken),
several chats each, with the demo model delegating lists in the background, while the process
is killed (SIGKILL), stopped (SIGTERM with a 1 s grace), paused (SIGSTOP/SIGCONT), the platforms answer
429/5xx or drop connections (Discord's gateway also resumes and is invalidated), and the state
directory's file system (a tmpfs; needs root) is filled by a ballast file for a few seconds.

Slack and Discord users keep writing while the process is down, more so between a stop and the
restart: Discord never sends those messages again and the fake Slack gives an event up once no
connection was open for it for ``--slack-give-up`` seconds, so only the catch-up at start
(`platforms.discord_catch_up`, `platforms.slack_catchup`) can find them. Each chat's first message
is answered before the chaos begins: a conversation the gateway never took a message in is not caught
up on (documented).

At the end each chat must hold exactly one answer per message: one demo explanation per plain message,
and per list one acknowledgement plus one set of results (all parts, every task once, in order) or one
restart report, or one refusal of a launch the journal could not take (the disk full); no progress card
left at ``⏳`` nor Slack placeholder; no child run to success twice or left unfinished, no delegation
undelivered, nothing pending, failed or dead in the outbox and inbox; every SIGTERM exits 0 within twice
the grace (plus slack for a loaded box).
Anomalies are printed, each failing chat's transcript written to the work directory with the logs.
Drops of a Telegram send are made before the fake takes it: an answer lost after it may double a
message, as documented (Telegram cannot be asked what it got). Give the tmpfs room (64m for
20 minutes): a state that outgrows it is a real full disk, which a start rightly refuses.

With ``--temporal`` the children run on `lifecycle.engine: temporal`: the soak starts a Temporal dev
server (its history in the work directory, ``temporal.db``) and ``--workers`` `switchboard worker`
processes, which are killed (SIGKILL) and stopped (SIGTERM) and started again too, on their own, while
children outlive the gateway's restarts. The chats of the ``--inline`` platforms (Telegram by default
there) delegate inline, the others in the background: an inline list gets one answer, no acknowledgement,
every task completed (its turn runs again whole after a restart). A child run to success twice for one
task is no anomaly by itself there (Temporal ran it on while its turn died with the gateway). What is
checked besides, once all has settled, from Temporal's listing of the task queue, each completed
workflow's outcome and the journal:

- no workflow still running, none the journal does not know, none closed without an outcome (failed,
  terminated, timed out, cancelled: a child's end, stopped or not, is its workflow's result), and no child
  failed (the demo's children never fail by themselves);
- no child the journal holds SUCCEEDED whose workflow did not complete with a completed outcome;
- no child run to success for no one while a gateway could have stopped it. Its result reached a chat if
  it was the last child launched for its task of an inline list (the chat's one answer is checked above)
  or its background delegation was delivered; any other success is work for no one, which is counted,
  not flagged, only when no gateway could stop it: it ended while the run that launched it still ran (the
  turn waiting for it died later), or while no gateway listened (between a run's exit and the next one's
  ``listening``; the runs' times are in ``runs.json``).

What cannot be told from outside: a child's work done partly and then stopped, and which of an inline
task's successful children the chat's answer came from (the last one, assumed).

    sudo .venv/bin/python bench/chaos_soak.py --minutes 20 --slack --discord --tmpfs 64m --workdir /tmp/soak
    .venv/bin/python bench/chaos_soak.py --minutes 12 --temporal --discord --workdir /tmp/tsoak
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gateway.outbox import PROGRESS_KINDS  # noqa: E402
from gateway.store import ChatHistory  # noqa: E402
from lifecycle import SqliteDatabase  # noqa: E402
from platforms.fakes.discord import FakeDiscord  # noqa: E402
from platforms.fakes.slack import FakeSlack  # noqa: E402
from platforms.fakes.telegram import FakeTelegram  # noqa: E402
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_post  # noqa: E402

SECRET = "soak-secret"
GRACE = 1.0
PAD = "lorem ipsum dolor sit amet " * 9  # long goals: a list's results run past Telegram's 4096
EXPLANATION = "I am Switchboard's offline demo model"
ACK = re.compile(r"Started (\d+) subagent\(s\)")
REFUSED = "delegate_task refused the list"
RESULTS = "[demo] Results:"
TASK = re.compile(r"task (\w+)-(\d+)-(\d+)\b")
PROGRESS = ("⏳", "✓ Done", "⏹", "⚠️ Failed")
GUILD = 900
CAUGHT_UP = (re.compile(r"discord: caught up on channel \d+: (\d+) message"),
             re.compile(r"slack: caught up on \S+: (\d+) message"))


class Gateway:
    def __init__(self, config: Path, work: Path) -> None:
        self.config, self.work = config, work
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""
        self.runs = 0
        self.paused = False
        self.spans: list[list[float]] = []  # per run, wall clock: [spawned, listening, exited]

    async def start(self) -> None:
        self.runs += 1
        self.spans.append([time.time(), 0.0, float("inf")])
        env = {**os.environ, "HOME": str(self.work), "PYTHONPATH": str(ROOT)}
        env.pop("SWITCHBOARD_CONFIG", None)
        log = open(self.work / f"run-{self.runs:04d}.log", "wb")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway.cli", "run", "--config", str(self.config),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env, cwd=str(self.work))
        async with asyncio.timeout(60):
            while True:
                line = await self.proc.stderr.readline()
                log.write(line)
                if not line:
                    raise RuntimeError(f"gateway run {self.runs} exited before listening")
                if match := re.search(rb"listening on (http://\S+)", line):
                    self.url = match.group(1).decode()
                    self.spans[-1][1] = time.time()
                    asyncio.ensure_future(_tee(self.proc.stderr, log))
                    return

    async def stop(self, how: signal.Signals) -> float:
        assert self.proc is not None
        if self.paused:
            self.proc.send_signal(signal.SIGCONT)
            self.paused = False
        began = time.monotonic()
        self.proc.send_signal(how)
        try:
            async with asyncio.timeout(60):
                await self.proc.wait()
        except TimeoutError:  # a hung stop is an anomaly to report, not the end of the soak
            anomaly(f"run {self.runs}: still running 60 s after {how.name}; killed (its log: run-{self.runs:04d}.log)")
            self.proc.kill()
            await self.proc.wait()
        took = time.monotonic() - began
        self.spans[-1][2] = time.time()
        if how == signal.SIGTERM and self.proc.returncode != 0:
            anomaly(f"run {self.runs}: SIGTERM exit code {self.proc.returncode}")
        if how == signal.SIGTERM and took > GRACE * 2 + 1.5:
            anomaly(f"run {self.runs}: SIGTERM took {took:.1f}s with a {GRACE}s grace")
        return took


class Workers:
    """`switchboard worker` processes on the Temporal task queue, each killed, stopped and started again
    on its own (a stopped one comes back after a pause, without holding up the other chaos)."""

    def __init__(self, config: Path, work: Path, count: int) -> None:
        self.config, self.work = config, work
        self.procs: list[asyncio.subprocess.Process | None] = [None] * count
        self.locks = [asyncio.Lock() for _ in range(count)]
        self.runs = 0

    async def start(self, i: int) -> None:
        self.runs += 1
        env = {**os.environ, "HOME": str(self.work), "PYTHONPATH": str(ROOT)}
        env.pop("SWITCHBOARD_CONFIG", None)
        name = f"worker-{i}-{self.runs:04d}.log"
        log = open(self.work / name, "wb")
        proc = self.procs[i] = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway.cli", "worker", "--config", str(self.config),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env, cwd=str(self.work))
        async with asyncio.timeout(60):
            while True:
                line = await proc.stderr.readline()
                log.write(line)
                if not line:
                    raise RuntimeError(f"worker {name} exited before it ran")
                if b"running children from task queue" in line:
                    asyncio.ensure_future(_tee(proc.stderr, log))
                    return

    async def bounce(self, i: int, how: signal.Signals, down: float) -> float:
        """Stop worker ``i`` with ``how``, start it again ``down`` seconds later; how long the stop took."""
        async with self.locks[i]:
            proc = self.procs[i]
            began = time.monotonic()
            proc.send_signal(how)
            try:
                async with asyncio.timeout(60):
                    await proc.wait()
            except TimeoutError:
                anomaly(f"worker {i}: still running 60 s after {how.name}; killed")
                proc.kill()
                await proc.wait()
            took = time.monotonic() - began
            if how == signal.SIGTERM and proc.returncode != 0:
                anomaly(f"worker {i}: SIGTERM exit code {proc.returncode}")
            if how == signal.SIGTERM and took > GRACE * 2 + 1.5:
                anomaly(f"worker {i}: SIGTERM took {took:.1f}s with a {GRACE}s grace")
            await asyncio.sleep(down)
            await self.start(i)
            return took

    async def stop_all(self) -> None:
        for i, proc in enumerate(self.procs):
            async with self.locks[i]:
                if proc is not None and proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
                    await proc.wait()


async def _tee(stream, log) -> None:
    while line := await stream.readline():
        log.write(line)
    log.close()


ANOMALIES: list[str] = []


def anomaly(text: str) -> None:
    ANOMALIES.append(text)
    print("ANOMALY:", text, flush=True)


def _task(goal: str | None) -> str:
    match = TASK.search(goal or "")
    return "-".join(match.groups()) if match else ""


def list_text(chat: str, n: int, items: int) -> str:
    return "Compare these:\n" + "\n".join(f"- task {chat}-{n}-{k} {PAD}" for k in range(items))


class Soak:
    def __init__(self, args) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.sent: dict[str, list[tuple[str, int]]] = {}  # chat -> [(kind, items)]
        self.stats = Counter()
        self.stopping = False
        self.down = False  # between a stop and the restart
        self.warm = asyncio.Event()  # every chat's first message answered: the chaos may begin
        self.lock = asyncio.Lock()  # one chaos action on the process at a time
        self.inline = set(args.inline)  # platforms whose chats delegate inline
        self.workers: Workers | None = None
        self.bounces: set[asyncio.Future] = set()
        self.state = Path(args.workdir) / "state"
        self.web_history: ChatHistory | None = None

    def message(self, chat: str) -> str:
        n = len(self.sent.setdefault(chat, []))
        if self.rng.random() < 0.5:
            items = self.rng.randint(2, 8)
            self.sent[chat].append(("list", items))
            return list_text(chat, n, items)
        self.sent[chat].append(("hello", 0))
        return f"hello {chat}-{n}"

    async def telegram_user(self, fake: FakeTelegram, chat: int) -> None:
        while not self.stopping:
            fake.push_message(chat, self.message(f"t{chat}"))
            self.stats["telegram messages"] += 1
            await asyncio.sleep(self.rng.uniform(2, 12))

    def count(self, platform: str) -> None:
        self.stats[f"{platform} messages"] += 1
        if self.down:
            self.stats[f"{platform} messages sent while down"] += 1

    async def slack_user(self, fake: FakeSlack, user: str) -> None:
        await self.slack_post(fake, user)
        await self.warm.wait()
        while not self.stopping:
            await self.slack_post(fake, user)
            await asyncio.sleep(self.rng.uniform(2, 12))

    async def slack_post(self, fake: FakeSlack, user: str) -> None:
        await fake.push_dm(user, self.message(f"s{user}"))
        self.count("slack")

    async def discord_user(self, fake: FakeDiscord, chat: str) -> None:
        self.discord_post(fake, chat)
        await self.warm.wait()
        while not self.stopping:
            self.discord_post(fake, chat)
            await asyncio.sleep(self.rng.uniform(2, 12))

    def discord_post(self, fake: FakeDiscord, chat: str) -> None:
        """A DM (chat ``d<n>``) or, in guild channel ``g<n>``, a mention from one of two users, or now
        and then chatter among them that the bot must not answer (and that moves the channel's last
        message seen)."""
        kind, n = chat[0], int(chat[1:])
        if kind == "d":
            fake.push_dm(5000 + n, self.message(chat))
        elif self.sent.get(chat) and self.rng.random() < 0.25:
            fake.push_guild_message(GUILD, 910 + n, 6000 + 2 * n + self.rng.randint(0, 1), f"chatter {chat}")
            self.stats["discord chatter"] += 1
            return
        else:
            fake.push_guild_message(GUILD, 910 + n, 6000 + 2 * n + self.rng.randint(0, 1), self.message(chat),
                                    mention_bot=True)
        self.count("discord")

    async def while_down(self, slack: FakeSlack | None, discord: FakeDiscord | None) -> None:
        """Users who write between a stop and the restart: what only the catch-up can find."""
        for _ in range(self.rng.randint(0, 3)):
            if slack is not None and self.rng.random() < 0.5:
                await self.slack_post(slack, f"U{self.rng.randrange(self.args.chats)}")
            if discord is not None and self.rng.random() < 0.7:
                self.discord_post(discord, f"{self.rng.choice('dg')}{self.rng.randrange(self.args.chats)}")
            await asyncio.sleep(self.rng.uniform(0, 0.8))

    async def until_taken(self, gateway: Gateway, chat: str, post: Callable[[str], Awaitable[tuple[int, str]]]) -> None:
        """``post(url)``, the same request each time, until the gateway takes it (202): its durable inbox
        knows a request it took before (no second turn). An answer a stopped run's port gave is no answer
        (another program may have taken the port meanwhile); another 4xx is an anomaly."""
        while True:
            url = gateway.url
            try:
                async with asyncio.timeout(15):
                    status, why = await post(url)
            except (aiohttp.ClientError, OSError, TimeoutError):
                await asyncio.sleep(0.2)
                continue
            if status == 202:
                return
            if url != gateway.url or gateway.proc.returncode is not None:
                await asyncio.sleep(0.2)
                continue
            if status < 500:
                anomaly(f"{chat}: answered {status}: {why[:200]}")
                return
            await asyncio.sleep(0.2)

    async def webhook_user(self, gateway: Gateway, chat: str) -> None:
        while not self.stopping:
            body = json.dumps({"text": self.message(chat), "chat_id": chat}).encode()
            stamp = str(int(time.time()))

            async def post(url: str, body: bytes = body, stamp: str = stamp) -> tuple[int, str]:
                reply = await signed_post(f"{url}/webhooks/soak", SECRET, body, timestamp=stamp)
                return reply.status, reply.body.decode(errors="replace")

            await self.until_taken(gateway, chat, post)
            self.stats["webhook messages"] += 1
            await asyncio.sleep(self.rng.uniform(2, 12))

    async def web_user(self, gateway: Gateway, chat: str) -> None:
        """A person on the web chat page: each message posted under a key of its own until the gateway
        takes it (the page's `key`, 8 to 128 letters, digits, - or _)."""
        async with aiohttp.ClientSession() as http:
            while not self.stopping:
                key = f"soak-{chat}-{len(self.sent.get(chat, [])):04d}"
                body = {"chat": chat, "text": self.message(chat), "key": key}

                async def post(url: str, body: dict = body) -> tuple[int, str]:
                    async with http.post(f"{url}/chat/api/messages", json=body) as reply:
                        return reply.status, await reply.text()

                await self.until_taken(gateway, chat, post)
                self.stats["web messages"] += 1
                await asyncio.sleep(self.rng.uniform(2, 12))

    async def chaos(self, gateway: Gateway, fake: FakeTelegram, receiver: WebhookReceiver, state: Path,
                    slack: FakeSlack, discord: FakeDiscord) -> None:
        actions = ["kill", "term", "pause", "tg429", "tg5xx", "tgdrop", "tgedit", "poll", "hook5xx", "hook429",
                   "hookdrop"] + (["disk"] if self.args.tmpfs else []) + (["sl429", "sldrop"] if self.args.slack else [])
        actions += ["kill", "term", "dc429", "dc5xx", "dcdrop", "dcinvalid"] if self.args.discord else []
        actions += ["wkill", "wkill", "wterm"] if self.args.temporal else []
        try:
            await fake.wait_for(lambda: all(self.texts(chat) for chat in self.sent), timeout=120)
        except TimeoutError:
            anomaly(f"first messages unanswered: {[chat for chat in self.sent if not self.texts(chat)]}")
        self.warm.set()
        while not self.stopping:
            await asyncio.sleep(self.rng.uniform(1, 6))
            action = self.rng.choice(actions)
            self.stats[action] += 1
            if action in ("wkill", "wterm"):  # in the background: the gateway's chaos goes on meanwhile
                bounce = asyncio.ensure_future(self.workers.bounce(
                    self.rng.randrange(len(self.workers.procs)), signal.SIGKILL if action == "wkill" else signal.SIGTERM,
                    self.rng.uniform(0, 4)))
                bounce.add_done_callback(self.worker_stopped)
                self.bounces.add(bounce)
                bounce.add_done_callback(self.bounces.discard)
                continue
            async with self.lock:
                if action in ("kill", "term"):
                    took = await gateway.stop(signal.SIGKILL if action == "kill" else signal.SIGTERM)
                    self.stats["stop seconds max"] = max(self.stats["stop seconds max"], round(took, 2))
                    self.down = True
                    await asyncio.gather(asyncio.sleep(self.rng.uniform(0, 1.5)),
                                         self.while_down(slack if self.args.slack else None,
                                                         discord if self.args.discord else None))
                    await gateway.start()
                    self.down = False
                elif action == "pause":
                    gateway.proc.send_signal(signal.SIGSTOP)
                    gateway.paused = True
                    await asyncio.sleep(self.rng.uniform(1, 5))
                    gateway.proc.send_signal(signal.SIGCONT)
                    gateway.paused = False
                elif action == "tg429":
                    for _ in range(self.rng.randint(1, 3)):
                        fake.fail_next("sendMessage", 429, retry_after=self.rng.randint(1, 3))
                elif action == "tg5xx":
                    fake.fail_next("sendMessage", self.rng.choice([500, 502]))
                elif action == "tgdrop":  # before the fake takes it: a lost answer after would double (documented)
                    fake.drop_next("sendMessage")
                elif action == "tgedit":
                    fake.fail_next("editMessageText", self.rng.choice([429, 500]))
                elif action == "poll":
                    fake.fail_next("getUpdates", self.rng.choice([429, 502]))
                elif action == "hook5xx":
                    receiver.fail_next(self.rng.randint(1, 4), self.rng.choice([500, 503]))
                elif action == "hook429":
                    receiver.fail_next(self.rng.randint(1, 3), 429, retry_after=self.rng.randint(1, 3))
                elif action == "hookdrop":
                    receiver.drop_next(self.rng.randint(1, 2))
                elif action == "sl429":
                    slack.fail_next(self.rng.choice(["chat.postMessage", "chat.update"]), status=429,
                                    retry_after=self.rng.randint(1, 3))
                elif action == "sldrop":  # no answer, the call not taken: Slack is asked before a resend
                    slack.fail_next("chat.postMessage", drop=True)
                elif action == "dc429":
                    discord.fail_next("POST /channels/{channel_id}/messages", 429, retry_after=self.rng.uniform(0.5, 2))
                elif action == "dc5xx":
                    discord.fail_next("POST /channels/{channel_id}/messages", self.rng.choice([500, 502]))
                elif action == "dcdrop":  # discord.py RESUMEs: what was sent meanwhile is replayed
                    discord.drop_socket()
                elif action == "dcinvalid":  # a new session, so a catch-up while the process runs
                    discord.invalidate_session()
                elif action == "disk":
                    ballast = state / "ballast"
                    subprocess.run(["dd", "if=/dev/zero", f"of={ballast}", "bs=64k"], capture_output=True)
                    await asyncio.sleep(self.rng.uniform(2, 12))  # long enough for the WAL to need new pages
                    ballast.unlink()
        if self.bounces:
            await asyncio.gather(*self.bounces)

    def worker_stopped(self, bounce: asyncio.Future) -> None:
        if not bounce.cancelled() and bounce.exception() is None:  # a failed restart is raised at the end
            self.stats["worker stop seconds max"] = max(self.stats["worker stop seconds max"], round(bounce.result(), 2))

    # -- checking ----------------------------------------------------------------------

    def expected(self, chat: str) -> tuple[int, int]:
        kinds = [k for k, _ in self.sent.get(chat, [])]
        return kinds.count("hello"), kinds.count("list")

    def check_chat(self, chat: str, texts: list[str], final: bool) -> list[str]:
        """What is wrong with a chat's final messages (empty when it is complete)."""
        problems = []
        hellos, lists = self.expected(chat)
        answers = [t for t in texts if not t.startswith(PROGRESS) and not t.startswith("⏱")]
        got_hellos = sum(EXPLANATION in t for t in answers)
        got_acks = sum(bool(ACK.search(t)) for t in answers)
        # A launch the journal could not take (the disk full) is refused, in a reply naming no task.
        refusals = sum(REFUSED in t for t in answers)
        if got_hellos != hellos:
            problems.append(f"{got_hellos} explanations for {hellos} plain messages")
        inline = self.platform(chat) in self.inline
        if inline:  # one answer per list, the results the turn waited for, no acknowledgement first
            results = sum(RESULTS in t for t in answers)
            if got_acks or results + refusals != lists:
                problems.append(f"{got_acks} acknowledgements, {results} results and {refusals} refusals for "
                                f"{lists} inline lists")
        elif got_acks + refusals != lists:
            problems.append(f"{got_acks} acknowledgements and {refusals} refusals for {lists} lists")
        for n, (kind, items) in enumerate(self.sent.get(chat, [])):
            if kind != "list":
                continue
            # The last task named on a line is the child's own output (the demo may label it otherwise).
            lines = [line for t in answers if not ACK.search(t) for line in t.splitlines() if TASK.search(line)]
            found = [(TASK.findall(line)[-1], line) for line in lines]
            ks = [int(k) for (c, m, k), _ in found if c == chat and int(m) == n]
            reported = any("restarted while subagents" in t and f"task {chat}-{n}-" in t for t in answers)
            if not ks and refusals:
                refusals -= 1
            elif inline and ks != list(range(items)):  # the turn runs again whole after a restart: no report
                problems.append(f"list {n}: task lines {ks} for {items} inline tasks")
            elif ks != list(range(items)) and not (reported and sorted(set(ks)) == ks and len(ks) <= items):
                problems.append(f"list {n}: task lines {ks} for {items} tasks")
            if inline and (unfinished := [line[:100] for (c, m, _), line in found
                                          if c == chat and int(m) == n and ": completed — " not in line]):
                problems.append(f"list {n}: inline tasks not completed: {unfinished}")
        if final:
            stuck = [t[:60] for t in texts if t.startswith("⏳") or t == "_working…_"]
            if stuck:
                problems.append(f"progress left behind: {stuck}")
        return problems

    def check_children(self, db: Path) -> None:
        """No child run to success twice, none left unfinished, no delegation left undelivered."""
        with contextlib.closing(sqlite3.connect(db)) as conn:
            runs = Counter(TASK.search(goal).groups() for goal, in conn.execute(
                "SELECT goal FROM lifecycle_records WHERE state = 'SUCCEEDED'") if TASK.search(goal or ""))
            states = dict(conn.execute("SELECT state, count(*) FROM lifecycle_records GROUP BY state").fetchall())
            delegations = dict(conn.execute("SELECT status, count(*) FROM gateway_delegations GROUP BY status").fetchall())
            outbox = dict(conn.execute("SELECT status, count(*) FROM gateway_outbox GROUP BY status").fetchall())
            dead = conn.execute("SELECT count(*) FROM gateway_dead_letters").fetchone()[0]
            dropped = dict(conn.execute("SELECT kind, count(*) FROM gateway_outbox WHERE status = 'dropped' "
                                        "GROUP BY kind").fetchall())
        self.stats.update({f"children {k}": v for k, v in states.items()})
        self.stats.update({f"delegations {k}": v for k, v in delegations.items()})
        self.stats.update({f"outbox {k}": v for k, v in outbox.items()})
        # On Temporal a child outlives its gateway: Soak.check_temporal tells which second success is one
        if (twice := [task for task, count in runs.items() if count > 1]) and not self.args.temporal:
            anomaly(f"children run to success more than once: {twice}")
        if live := {k: v for k, v in states.items() if k not in ("SUCCEEDED", "FAILED", "INTERRUPTED", "CANCELLED")}:
            anomaly(f"children left unfinished: {live}")
        if delegations.get("running"):
            anomaly(f"{delegations['running']} delegations never delivered")
        if dropped.keys() - PROGRESS_KINDS:
            anomaly(f"answers withdrawn from the outbox: {dropped}")
        if outbox.get("pending") or outbox.get("failed") or dead:
            anomaly(f"outbox {outbox}, {dead} dead letters")

    @staticmethod
    def platform(chat: str) -> str:
        return {"t": "telegram", "s": "slack", "d": "discord", "g": "discord", "w": "webhook", "e": "web"}[chat[0]]

    async def check_temporal(self, address: str, queue: str, db: Path, spans: list[list[float]]) -> None:
        """What Temporal ran against what the journal says and the chats got (see the docstring)."""
        from temporalio.client import Client, WorkflowExecutionStatus

        client = await Client.connect(address)
        query = f'TaskQueue="{queue}"'
        # Visibility lags (batched once a second): a workflow that just ended may still list as running.
        deadline = time.monotonic() + 15
        while True:
            flows = [wf async for wf in client.list_workflows(query)]
            running = [wf.id for wf in flows if wf.status == WorkflowExecutionStatus.RUNNING]
            if not running or time.monotonic() > deadline:
                break
            await asyncio.sleep(1)
        self.stats["workflows"] = len(flows)
        self.stats.update(Counter(f"workflows {wf.status.name}" for wf in flows))
        if running:
            anomaly(f"workflows still running once all settled: {running[:10]} ({len(running)})")
        with contextlib.closing(sqlite3.connect(db)) as conn:
            journal = {sid: (state, goal, bool(inline), created) for sid, state, goal, inline, created in
                       conn.execute("SELECT subagent_id, state, goal, inline, created_at FROM lifecycle_records")}
            delivered = {task["subagent_id"] for tasks, in conn.execute(
                "SELECT tasks FROM gateway_delegations WHERE status = 'delivered'") for task in json.loads(tasks)}
        if unknown := sorted({wf.id for wf in flows} - journal.keys()):
            anomaly(f"workflows the journal does not know: {unknown[:10]} ({len(unknown)})")
        # A child's own end, stopped ones too, is the workflow's result: any other close is the engine's failure.
        if broken := [f"{wf.id} {wf.status.name}" for wf in flows if wf.status.name in ("FAILED", "TERMINATED",
                                                                                         "TIMED_OUT", "CANCELED")]:
            anomaly(f"workflows that ended without an outcome: {broken[:10]} ({len(broken)})")
        ended: dict[str, float] = {}  # workflow id -> when its child ended having done its work
        failed = []
        for wf in flows:  # continue-as-new makes several runs of one id: the last one's outcome counts
            if wf.status == WorkflowExecutionStatus.COMPLETED:
                outcome = await client.get_workflow_handle(wf.id, run_id=wf.run_id).result()
                self.stats[f"workflow outcomes {outcome.get('status')}"] += 1
                if outcome.get("status") == "completed":
                    ended[wf.id] = wf.close_time.timestamp()
                elif outcome.get("status") != "interrupted":
                    failed.append(f"{wf.id}: {outcome.get('status')} {str(outcome.get('error'))[:120]}")
        if failed:  # the demo's children never fail by themselves: the chaos made them
            anomaly(f"children that failed: {failed[:5]} ({len(failed)})")
        for sid, (state, goal, _, _) in journal.items():
            if state == "SUCCEEDED" and sid not in ended:
                anomaly(f"{sid} ({_task(goal)}): SUCCEEDED in the journal, not completed in Temporal")

        def why(created: float, at: float) -> str | None:
            """Why a child that ended at ``at`` could not be stopped, if it could not: its own run still
            ran (its turn died after it ended), or no gateway listened then (none could stop it)."""
            for spawned, _, exited in spans:
                if spawned <= created <= exited and at <= exited:
                    return "its turn died after it ended"
            if any(a[2] <= at <= b[1] for a, b in zip(spans, spans[1:])):
                return "it ended while no gateway listened"
            return None

        # An inline list's answer holds the results of the last children its turn launched (their chat got
        # one set of them, checked above); a background child's reached its chat if its delegation was
        # delivered. Any other success was work done for no one, which a gateway should have stopped
        # unless it could not (the turn waiting for it died after it ended, or no gateway ran).
        last: dict[str, str] = {}
        for sid in sorted((sid for sid in ended if journal.get(sid, (0, 0, False))[2]), key=lambda s: journal[s][3]):
            last[_task(journal[sid][1])] = sid
        tasks = Counter(_task(journal[sid][1]) for sid in ended if sid in journal)
        self.stats["tasks done to success more than once"] = sum(count > 1 for count in tasks.values())
        unstopped = []
        for sid, at in ended.items():
            state, goal, inline, created = journal.get(sid, ("?", "", False, 0.0))
            if (inline and last.get(_task(goal)) == sid) or (not inline and sid in delivered):
                continue
            reason = why(created, at)
            if reason is None:
                unstopped.append(f"{sid} ({_task(goal)}, {'inline' if inline else 'background'}, {state})")
            else:
                self.stats[f"children done for no one: {reason} ({'inline' if inline else 'background'})"] += 1
        if unstopped:
            anomaly(f"children run to success for no one while a gateway could stop them: {unstopped[:10]} "
                    f"({len(unstopped)})")

    def telegram_texts(self, fake: FakeTelegram, chat: str) -> list[str]:
        return [m["text"] for m in fake.messages.get(chat.removeprefix("t"), [])]

    def slack_texts(self, fake: FakeSlack, chat: str) -> list[str]:
        channel = fake.dm_channel(chat.removeprefix("s"))
        return [m.get("text", "") for (c, _), ms in fake.messages.items() if c == channel for m in ms if m.get("bot_id")]

    def discord_texts(self, fake: FakeDiscord, chat: str) -> list[str]:
        channel = fake.dm_channel(5000 + int(chat[1:])) if chat.startswith("d") else 910 + int(chat[1:])
        return [m.content for m in fake.bot_messages(channel)]

    def texts(self, chat: str) -> list[str]:
        if chat.startswith("t"):
            return self.telegram_texts(self.fake, chat)
        if chat.startswith(("d", "g")):
            return self.discord_texts(self.discord, chat)
        if chat.startswith("e"):
            return self.web_texts(chat)
        return self.slack_texts(self.slack, chat) if chat.startswith("s") else self.webhook_texts(self.receiver, chat)

    def caught_up(self, work: Path) -> None:
        """What the catch-ups read back, from the runs' logs (Discord's count holds every message
        read, chatter and the bot's own too; Slack's those for the bot)."""
        for log in sorted(work.glob("run-*.log")):
            text = log.read_text(errors="replace")
            for platform, pattern in zip(("discord", "slack"), CAUGHT_UP):
                self.stats[f"{platform} messages read back by a catch-up"] += sum(map(int, pattern.findall(text)))

    def web_texts(self, chat: str) -> list[str]:
        """What the web chat's page shows from the gateway, read from its state database (the history its API
        serves, without the API's limit of 200 messages), opened once it exists."""
        if self.web_history is None:
            if not (self.state / "switchboard.db").exists():
                return []
            self.web_history = ChatHistory(SqliteDatabase(self.state / "switchboard.db"))
        return [m["text"] for m in self.web_history.messages(chat, 1_000_000) if m["role"] != "user"]

    def webhook_texts(self, receiver: WebhookReceiver, chat: str) -> list[str]:
        return [p["text"] for p in receiver.payloads if str(p.get("chat_id")) == chat]

    def all_problems(self, final: bool) -> dict[str, list[str]]:
        out = {}
        for chat in self.sent:
            if problems := self.check_chat(chat, self.texts(chat), final):
                out[chat] = problems
        return out


async def main(args) -> None:
    work = Path(args.workdir)
    if (work / "state" / "switchboard.db").exists():
        # The fakes number their updates and events from the same start each time: on an earlier soak's inbox
        # the first messages were dropped as duplicates and read as unanswered, an anomaly of the soak's own.
        raise SystemExit(f"{work} holds an earlier soak's state: remove it, or pass another --workdir")
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    state.mkdir(exist_ok=True)
    if args.tmpfs:
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.tmpfs}", "tmpfs", str(state)], check=True)
    soak = Soak(args)
    server = None
    if args.temporal:
        from lifecycle.temporal.testing import DevServer

        # Its history on disk, kept with the logs: `temporal workflow list --address ...` reads it afterwards.
        server = await asyncio.to_thread(DevServer(db_file=work / "temporal.db", log_file=work / "temporal.log").start)
        queue = f"soak-{os.getpid()}-{int(time.time())}"
        print(f"Temporal dev server at {server.address}, task queue {queue}", flush=True)
    try:
        async with (FakeTelegram() as fake, WebhookReceiver(SECRET) as receiver,
                    FakeSlack(ack_timeout=20, give_up_after=args.slack_give_up) as slack, FakeDiscord() as discord):
            soak.fake, soak.receiver, soak.slack, soak.discord = fake, receiver, slack, discord
            config = work / "switchboard.yaml"
            config.write_text(yaml.safe_dump({
                "state_dir": str(state), "server": {"port": 0, "shutdown_grace_seconds": GRACE},
                "model": {"demo": {"child_steps": 2, "step_seconds": 0.4}},
                "display": {"busy_input_mode": "queue", "progress_delay": 0.5,
                            # delegation.gateway_mode auto: a messaging platform without interim messages is inline
                            **({"platforms": {p: {"interim_assistant_messages": False} for p in args.inline}}
                               if args.inline else {})},
                **({"lifecycle": {"engine": "temporal", "temporal": {"address": server.address, "task_queue": queue}}}
                   if server else {}),
                "platforms": {
                    "telegram": {"enabled": True, "token": fake.token, "api_base": fake.base_url, "allow_all": True},
                    **({"slack": {"enabled": True, "bot_token": slack.bot_token, "app_token": slack.app_token,
                                  "api_base": slack.api_base, "allow_all": True}} if args.slack else {}),
                    **({"discord": {"enabled": True, "token": discord.token, "api_base": discord.api_base,
                                    "gateway_url": discord.gateway_url, "allow_all": True}} if args.discord else {}),
                    "webhook": {"enabled": True, "routes": {"soak": {"secret": SECRET, "deliver_url": receiver.url}}},
                    "web": {"enabled": True},
                },
            }))
            gateway = Gateway(config, work)
            if server:
                soak.workers = Workers(config, work, args.workers)
                await asyncio.gather(*(soak.workers.start(i) for i in range(args.workers)))
            await gateway.start()
            users = [asyncio.ensure_future(soak.telegram_user(fake, 100 + i)) for i in range(args.chats)]
            users += [asyncio.ensure_future(soak.webhook_user(gateway, f"w{i}")) for i in range(args.chats)]
            users += [asyncio.ensure_future(soak.web_user(gateway, f"e{i}")) for i in range(args.chats)]
            if args.slack:
                users += [asyncio.ensure_future(soak.slack_user(slack, f"U{i}")) for i in range(args.chats)]
            if args.discord:
                users += [asyncio.ensure_future(soak.discord_user(discord, f"{kind}{i}"))
                          for kind in "dg" for i in range(args.chats)]
            chaos = asyncio.ensure_future(soak.chaos(gateway, fake, receiver, state, slack, discord))
            await asyncio.sleep(args.minutes * 60)
            soak.stopping = True
            await asyncio.gather(chaos, *users)
            try:
                # Final checks too: a card's last edit waiting out a 429 when the chats are complete is
                # sent by the next start, not within the last stop's grace, and would read as left behind.
                await fake.wait_for(lambda: not fake.pending and not soak.all_problems(True), 180)
            except TimeoutError:
                pass
            took = await gateway.stop(signal.SIGTERM)
            soak.stats["final stop seconds"] = round(took, 2)
            (work / "runs.json").write_text(json.dumps(gateway.spans))  # [spawned, listening, exited] per run
            for chat, problems in soak.all_problems(True).items():
                anomaly(f"{chat}: {problems}")
                texts = soak.texts(chat)
                (work / f"transcript-{chat}.json").write_text(json.dumps(
                    {"sent": soak.sent[chat], "texts": texts}, indent=1, ensure_ascii=False))
            for name in ("switchboard.db", "switchboard.db-wal"):
                if (state / name).exists():
                    shutil.copy(state / name, work / name)
            soak.check_children(work / "switchboard.db")
            if server:
                soak.stats["worker runs"] = soak.workers.runs
                soak.stats["seconds no gateway listened"] = round(sum(
                    b[1] - a[2] for a, b in zip(gateway.spans, gateway.spans[1:])), 1)
                await soak.check_temporal(server.address, queue, work / "switchboard.db", gateway.spans)
                await soak.workers.stop_all()
            soak.stats["runs"] = gateway.runs
            soak.stats["telegram messages out"] = sum(len(v) for v in fake.messages.values())
            soak.stats["webhook deliveries (unique)"] = len(receiver.unique)
            soak.stats["slack events given up (no connection, or no ack)"] = len(slack.given_up)
            soak.caught_up(work)
            if discord.errors:
                anomaly(f"fake Discord errors: {discord.errors[:5]}")
    finally:
        if soak.workers is not None:
            for proc in soak.workers.procs:
                if proc is not None and proc.returncode is None:
                    proc.kill()
        if server is not None:
            server.stop()
        if args.tmpfs:
            subprocess.run(["umount", "-l", str(state)])
    print(json.dumps(dict(soak.stats), indent=1))
    print(f"{len(ANOMALIES)} anomalies")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--chats", type=int, default=3, help="chats per platform")
    parser.add_argument("--seed", default="soak")
    parser.add_argument("--slack", action="store_true", help="Slack (Socket Mode) chats too")
    parser.add_argument("--slack-give-up", type=float, default=2.0,
                        help="seconds without a connection after which the fake Slack loses an event")
    parser.add_argument("--discord", action="store_true", help="Discord DMs and guild channels too")
    parser.add_argument("--workdir", default="/tmp/switchboard-soak")
    parser.add_argument("--tmpfs", default="", help="size of a tmpfs for the state dir (e.g. 24m), to fill it")
    parser.add_argument("--temporal", action="store_true",
                        help="children on lifecycle.engine: temporal (a dev server and workers, killed too)")
    parser.add_argument("--workers", type=int, default=2, help="switchboard worker processes with --temporal")
    parser.add_argument("--inline", action="append", choices=["telegram", "slack", "discord"],
                        help="a platform whose chats delegate inline (repeatable; default: telegram with --temporal)")
    args = parser.parse_args()
    if args.inline is None:
        args.inline = ["telegram"] if args.temporal else []
    asyncio.run(main(args))
