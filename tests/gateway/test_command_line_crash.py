"""A SIGKILL of the real `switchboard run` while a command's answer waits in line behind a plugin's hung command
(`gateway.command_answers.CommandAnswers.answer_in_line`): the command ran, and after the restart its answer is given
once, in its turn, its handler not run again."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import textwrap
import time
from types import SimpleNamespace

from gateway.command_answers import CommandAnswers
from gateway.store import GatewayStore
from platforms.base import Inbound
from tests.gateway.cli_process import Running, write_config
from tests.gateway.test_shutdown_with_hung_plugins import SECRET, post

PLUGIN = """
    import logging
    import pathlib
    import threading

    here = pathlib.Path(__file__).parent

    def hang(args, context):
        logging.getLogger("line_plugin").warning("the hang has started")
        while (here / "hang").exists():  # gone at the restart: the command run again ends
            threading.Event().wait(0.05)
        return "hang over"

    def bump(args, context):
        with open(here / "bumps", "a") as bumps:
            bumps.write("bumped\\n")
        return "bumped"

    def register(ctx):
        ctx.register_command("hang", hang)
        ctx.register_command("bump", bump)
"""


def _rows(db, sql: str) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.OperationalError:  # not created yet
            return []


def _until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_an_answer_waiting_in_line_at_a_sigkill_is_given_after_the_restart_its_command_not_run_again(tmp_path):
    (tmp_path / "line_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "hang").touch()
    db = tmp_path / "state" / "switchboard.db"
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"),
        "server": {"port": 0, "shutdown_grace_seconds": 1},
        "model": {"demo": {"child_steps": 0, "step_seconds": 0}},
        "plugins": ["line_plugin"],
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}},
    })
    with Running(tmp_path, "--config", str(config)).started() as gateway:
        assert post(gateway.url, "/hang") == 202
        gateway.wait_for("the hang has started")
        assert post(gateway.url, "/bump") == 202
        _until(lambda: (tmp_path / "bumps").exists())
        # Accepted once what the gateway wrote before it is committed: the answer of /bump, which ran by then.
        assert post(gateway.url, "/help") == 202
        gateway.proc.send_signal(signal.SIGKILL)
        gateway.proc.wait(10)
    (tmp_path / "hang").unlink()
    assert (tmp_path / "bumps").read_text() == "bumped\n"

    with Running(tmp_path, "--config", str(config)).started() as gateway:
        _until(lambda: _rows(db, "SELECT status FROM gateway_inbox") == [("done",)] * 3)
        gateway.ends_on_sigterm(10.0)
    assert (tmp_path / "bumps").read_text() == "bumped\n"  # its work done once
    answers = [text for (text,) in _rows(db, "SELECT text FROM gateway_outbox WHERE kind='command' ORDER BY id")]
    assert answers[:2] == ["hang over", "bumped"] and len(answers) == 3  # in the order sent, each once


async def test_an_answer_of_megabytes_waiting_in_line_is_not_written_to_the_state_database_on_the_event_loop(tmp_path):
    # A plugin's answer may be megabytes: the outbox journals its first parts and writes the whole as answer.md in a
    # worker thread. Kept in the store while it waited, all 10 MB were written on the event loop (some 160-300 ms
    # holding every chat, read back as long at a replay) and held in the database for the inbox's week.
    store = GatewayStore(tmp_path / "s.db")
    gate, said = asyncio.Event(), []
    big = "é" * 10_000_000

    class Commands:
        async def run(self, session, command, inbound):
            if command == "hang":
                await gate.wait()
                return "hang over"
            return big if command == "big" else "small"

    answers = CommandAnswers(None, store.inbox, Commands(), None, accepting=lambda: True, clock=None)

    async def answer_long(inbound, text, turn_id):
        said.append(text)
        store.inbox.settle(inbound.platform, inbound.event_id)

    answers._answer_long = answer_long
    session = SimpleNamespace(key="chat")
    for command in ("hang", "big", "small"):
        inbound = Inbound(platform="chat", chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                          text=f"/{command}", event_id=command)
        store.inbox.accept(inbound, None)
        store.inbox.begin("chat", command)
        answers.answer_in_line(session, inbound, command)
    for _ in range(10):
        await asyncio.sleep(0)
    try:
        assert store.inbox.kept_answer("chat", "small") == "small"  # kept, as any answer within the bound
        assert len(store.inbox.kept_answer("chat", "big") or "") == 0  # not kept: a crash runs it again, as before
        gate.set()
        async with asyncio.timeout(5):
            while answers.aside:
                await asyncio.sleep(0)
        assert said == ["hang over", big, "small"]  # still given in its turn
    finally:
        store.close()


def test_a_kept_answer_goes_once_its_event_is_settled(tmp_path):
    """Kept for a replay only: once its event is handled it is not left for the weekly prune (up to 200,000
    characters a command, a busy chat's week of them)."""
    store = GatewayStore(tmp_path / "s.db")
    try:
        inbound = Inbound(platform="chat", chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                          text="/deploy", event_id="e1")
        store.inbox.accept(inbound, None)
        store.inbox.begin("chat", "e1")
        store.inbox.keep_answer("chat", "e1", "deployed")
        assert store.inbox.kept_answer("chat", "e1") == "deployed"
        store.inbox.settle("chat", "e1")
        assert store.inbox.kept_answer("chat", "e1") is None
    finally:
        store.close()
