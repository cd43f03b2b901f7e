"""The model's question across a SIGKILL: `switchboard run` killed while its question waits in a
Telegram chat, the user answering while it is down. Restarted on the same state directory, the
turn runs again, and the answer the user gave is its answer: not taken for a message of its own,
which stopped the turn run again and reached the model without the question it answered. Killed
while the question waits, again and again, the message is not set aside as a dead letter: a turn
waiting for its answer is idle, and no death then is its fault."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from pathlib import Path

import yaml

from agent.testing import FakeOpenAIServer
from gateway.questions import question_text
from platforms.fakes.telegram import FakeTelegram
from tests.gateway.wire import call, openai_model
from tests.scenarios.test_outbox_restart import restarts, start

pytestmark = restarts(4)

CHOICES = ["staging", "production"]
QUESTION = question_text("Which environment?", CHOICES, 600)


class Model:
    """Asks which environment, then deploys to the answer; ``gate``: what the question waits for."""

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None
        self.asks = 0

    async def __call__(self, body: dict) -> dict:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"text": f"deploying to: {last['content']}"}
        if "deploy" in str(last.get("content")):
            self.asks += 1
            if self.gate is not None:
                await self.gate.wait()
            return call("clarify", {"question": "Which environment?", "choices": CHOICES})
        return {"text": f"plain answer to {last.get('content')}"}


def sent_questions(database: Path) -> int:
    with contextlib.closing(sqlite3.connect(database)) as db:
        return db.execute(
            "SELECT count(*) FROM gateway_outbox WHERE key LIKE '%:ask:%' AND status='sent'").fetchone()[0]


def inbox_rows(database: Path) -> list[tuple[str, int]]:
    """Each event's status and attempts, oldest first."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        return db.execute("SELECT status, attempts FROM gateway_inbox ORDER BY received_at").fetchall()


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages["42"]]


def write_config(tmp_path: Path, server: FakeOpenAIServer, fake: FakeTelegram, **more: object) -> Path:
    """The gateway's config: the fake Telegram's chat, the fake model server, ``more`` sections on top."""
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"), "server": {"port": 0}, "model": openai_model(server),
        "platforms": {"telegram": {"enabled": True, "token": fake.token, "api_base": fake.base_url,
                                   "allow_all": True}},
        **more,
    }))
    return config


async def test_an_answer_given_while_the_gateway_was_down_answers_the_question_the_turn_asks_again(tmp_path: Path):
    model = Model()
    async with FakeOpenAIServer() as server, FakeTelegram() as fake:
        server.respond_with(model)
        config = write_config(tmp_path, server, fake)
        proc, _ = await start(config, tmp_path)
        try:
            fake.push_message(42, "please deploy the app")
            await fake.wait_for(lambda: texts(fake) == [QUESTION], timeout=30)
            # Killed once the gateway knows it sent it (else it sends it again after the start).
            await fake.wait_for(lambda: sent_questions(tmp_path / "state" / "switchboard.db") == 1, timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        fake.push_message(42, "2")  # answered while the gateway is down
        model.gate = asyncio.Event()  # the turn run again asks only once the answer is in
        proc, _ = await start(config, tmp_path)
        try:
            await server.wait_for(lambda: model.asks == 2, timeout=30)
            await fake.wait_for(lambda: not fake.pending, timeout=30)  # the answer is handed over
            model.gate.set()
            await fake.wait_for(lambda: len(texts(fake)) == 2, timeout=30)
        finally:  # a graceful stop flushes the outbox: anything more would go out now
            model.gate.set()
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert texts(fake) == [QUESTION, "deploying to: production"]  # the same question: not asked twice


async def test_deaths_while_the_question_waits_never_set_the_message_aside(tmp_path: Path):
    # Three unrelated deaths (another chat's poison message, an OOM, a reboot) while the user thinks
    # about the answer: each was charged to the message whose turn waited, which became a dead letter.
    max_attempts = 3
    database = tmp_path / "state" / "switchboard.db"
    async with FakeOpenAIServer() as server, FakeTelegram() as fake:
        server.respond_with(Model())
        config = write_config(tmp_path, server, fake, inbox={"max_attempts": max_attempts})
        for kill in range(1, max_attempts + 1):
            proc, _ = await start(config, tmp_path)
            try:
                if kill == 1:
                    fake.push_message(42, "please deploy the app")
                # Asked (again, by the turn run again): known sent, so the turn waits for the answer.
                await fake.wait_for(lambda: sent_questions(database) == kill, timeout=30)
            finally:
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: len(texts(fake)) == max_attempts + 1, timeout=30)
            assert texts(fake) == [QUESTION] * (max_attempts + 1)  # asked once more: no apology
            assert inbox_rows(database) == [("received", 0)]  # replayed, charged nothing; waiting again
            fake.push_message(42, "2")
            await fake.wait_for(lambda: len(texts(fake)) == max_attempts + 2, timeout=30)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert texts(fake)[-1] == "deploying to: production"
    assert inbox_rows(database) == [("done", 0), ("done", 0)]  # the message, and its answer
    with contextlib.closing(sqlite3.connect(database)) as db:
        assert db.execute("SELECT count(*) FROM gateway_dead_letters").fetchone() == (0,)


def question_rows(database: Path) -> list[tuple[str, int]]:
    """Each question part's status and attempts, oldest first."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        return db.execute("SELECT status, attempts FROM gateway_outbox WHERE key LIKE '%:ask:%' ORDER BY id").fetchall()


def question_tried(database: Path) -> bool:
    """Whether the one question part journaled is marked tried: it may have reached the platform."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        return db.execute("SELECT status, tried FROM gateway_outbox WHERE key LIKE '%:ask:%'").fetchall() == [
            ("pending", 1)]


async def test_an_answer_to_the_question_a_killed_gateway_left_unsent_is_taken_while_the_one_asked_again_waits(
        tmp_path: Path):
    # Killed while its question was on its way to Telegram (it may have gone out, its answer lost), the
    # gateway sends it again after the start; the turn run again has asked again meanwhile, in a message
    # that waits its turn behind it (the chat's pace, a 429). The user answers the question they see: that
    # answer was taken for a message of its own, which stopped the turn (the next message interrupts it)
    # and reached the model without the question.
    model = Model()
    database = tmp_path / "state" / "switchboard.db"
    async with FakeOpenAIServer() as server, FakeTelegram() as fake:
        server.respond_with(model)
        config = write_config(tmp_path, server, fake, display={"progress": "off"})
        proc, _ = await start(config, tmp_path)
        try:
            fake.hang_next("sendMessage")  # the question: Telegram never answers
            fake.push_message(42, "please deploy the app")
            await fake.wait_for(lambda: fake.calls_to("sendMessage"), timeout=30)  # the hang is used up
            await fake.wait_for(lambda: question_tried(database), timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        fake.hold("sendMessage")  # the question left unsent goes out once the turn has asked again
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: len(question_rows(database)) == 2, timeout=30)
            fake.release("sendMessage")
            await fake.wait_for(lambda: texts(fake) == [QUESTION], timeout=30)
            # The question asked again waits (the chat's 1 s pace, then this 429): the answer, taken within
            # milliseconds, comes first.
            fake.fail_next("sendMessage", 429, retry_after=1)
            fake.push_message(42, "2")
            await fake.wait_for(lambda: any(not t.startswith("❓") for t in texts(fake)), timeout=30)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert texts(fake) == [QUESTION, QUESTION, "deploying to: production"]


async def test_a_question_a_killed_gateway_never_tried_to_send_is_not_sent_besides_the_one_asked_again(
        tmp_path: Path):
    # Killed while its question waited behind the turn's interim message (Telegram's 429), the gateway
    # sent it after the start, ahead of the one the turn run again asked: the same question twice, the
    # first one asking for an answer nothing took yet.
    interim = "Let me check the environments."

    async def checking_then_asking(body: dict) -> dict:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"text": f"deploying to: {last['content']}"}
        return {"text": interim, **call("clarify", {"question": "Which environment?", "choices": CHOICES})}

    database = tmp_path / "state" / "switchboard.db"
    async with FakeOpenAIServer() as server, FakeTelegram() as fake:
        server.respond_with(checking_then_asking)
        config = write_config(tmp_path, server, fake, display={"progress": "off"})
        proc, _ = await start(config, tmp_path)
        try:
            fake.fail_next("sendMessage", 429, retry_after=4)  # the interim message: the question waits behind it
            fake.push_message(42, "please deploy the app")
            await fake.wait_for(lambda: question_rows(database) == [("pending", 0)], timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        fake.hold("sendMessage")  # the chat waits until the turn run again has asked again
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: len(question_rows(database)) == 2, timeout=30)
            fake.release("sendMessage")
            await fake.wait_for(lambda: ("sent", 1) in question_rows(database)[1:], timeout=30)
            fake.push_message(42, "2")
            await fake.wait_for(lambda: any(t.startswith("deploying") for t in texts(fake)), timeout=30)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert texts(fake) == [interim, QUESTION, "deploying to: production"]


async def test_a_question_a_killed_gateway_left_refused_is_not_sent_when_the_turn_run_again_does_not_ask(
        tmp_path: Path):
    # Killed while its question waited out Telegram's 429, the gateway sent it after the start although the
    # turn run again did not ask it (a model may decide otherwise the second time): it asked for an answer
    # nothing waited for, and the user's answer became a message of its own. A stop drops such a question.
    guess = "deploying to staging (my best guess)"
    asked = 0

    async def asking_once(body: dict) -> dict:
        nonlocal asked
        last = body["messages"][-1]
        if "deploy" not in str(last.get("content")):
            return {"text": f"plain answer to {last.get('content')}"}
        asked += 1
        return call("clarify", {"question": "Which environment?", "choices": CHOICES}) if asked == 1 else {
            "text": guess}

    database = tmp_path / "state" / "switchboard.db"
    async with FakeOpenAIServer() as server, FakeTelegram() as fake:
        server.respond_with(asking_once)
        config = write_config(tmp_path, server, fake, display={"progress": "off"})
        proc, _ = await start(config, tmp_path)
        try:
            fake.fail_next("sendMessage", 429, retry_after=4)  # the gateway is killed before it tries again
            fake.push_message(42, "please deploy the app")
            await fake.wait_for(lambda: question_rows(database) == [("pending", 1)], timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: guess in texts(fake), timeout=30)
        finally:  # a graceful stop flushes the outbox: the question, if still pending, would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert texts(fake) == [guess]
    assert question_rows(database) == [("dropped", 1)]
