"""Slack across a SIGKILL: `switchboard run` in a subprocess on the loopback FakeSlack, killed
while a turn runs with its `_working…_` placeholder up, then restarted on the same state."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from pathlib import Path

import aiohttp
import yaml

from platforms.fakes.slack import FakeSlack
from platforms.slack_placeholders import PLACEHOLDER_EVENT
from tests.scenarios.test_outbox_restart import restarts, start

pytestmark = restarts(3)

DM = "DU1"  # the fake's DM channel with user U1


def write_config(tmp_path: Path, fake: FakeSlack, script: dict, **server) -> Path:
    """``server``: settings of the ``server`` section besides its port."""
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script))
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"),
        "server": {"port": 0, **server},
        "model": {"provider": "scripted", "script": str(tmp_path / "script.yaml")},
        # No progress card: these tests count the placeholder and the reply alone.
        "display": {"progress": "off"},
        "platforms": {"slack": {"enabled": True, "bot_token": fake.bot_token, "app_token": fake.app_token,
                                "api_base": fake.api_base, "allow_all": True}},
    }))
    return config


async def refused(url: str) -> None:
    """Until the gateway reports Slack down: the deletion was answered, refused for the token."""
    async with aiohttp.ClientSession() as session, asyncio.timeout(15):
        while True:
            async with session.get(f"{url}/healthz") as response:
                if response.status == 503:
                    return
            await asyncio.sleep(0.05)  # another process: nothing to wait on but its answers


async def replies_recorded(tmp_path: Path) -> None:
    """Until the running gateway has recorded every reply it sent: one killed before would have its
    last reply looked up in the chat after the restart (a lookup, and a wait for Slack's pacing of them)."""
    async with asyncio.timeout(15):
        while True:
            with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db:
                if not db.execute("SELECT 1 FROM gateway_outbox WHERE status='pending'").fetchone():
                    return
            await asyncio.sleep(0.05)  # another process: nothing to wait on but its database


def bot_texts(fake: FakeSlack) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((DM, None), []) if m.get("bot_id")]


async def run_until(fake: FakeSlack, config: Path, tmp_path: Path, *conditions) -> int:
    """Start the gateway on ``config``, wait for each of ``conditions`` in turn, then stop it with
    SIGTERM: its exit status."""
    proc, _ = await start(config, tmp_path)
    try:
        for condition in conditions:
            await fake.wait_for(condition, timeout=15)
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
    return proc.returncode


async def test_a_placeholder_a_killed_gateway_left_is_deleted_when_its_turn_runs_again(tmp_path):
    async with FakeSlack() as fake:
        config = write_config(tmp_path, fake, {"parent": [[{"sleep": 60, "text": "never sent"}]]})
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: fake.open_connections, timeout=15)
            await fake.push_dm("U1", "is the build green?")
            await fake.wait_for(lambda: bot_texts(fake) == ["_working…_"], timeout=15)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        [left] = fake.messages[(DM, None)][1:]
        assert left["metadata"]["event_type"] == PLACEHOLDER_EVENT

        write_config(tmp_path, fake, {"parent": [[{"text": "it is green"}]]})
        await run_until(fake, config, tmp_path, lambda: bot_texts(fake) == ["it is green"])
    deleted = {c.params["ts"] for c in fake.calls_to("chat.delete")}
    assert left["ts"] in deleted
    assert len([c for c in fake.calls_to("chat.postMessage") if c.params.get("text") == "it is green"]) == 1


async def test_a_reply_slack_refused_for_a_revoked_token_is_sent_once_and_its_placeholder_deleted_after_a_restart(
        tmp_path):
    async with FakeSlack() as fake:
        # A grace shorter than the wait for the outbox's first probe of the refused token (5 s): the stop
        # does not wait for that probe (refused too, it would put the next one 10 s off, past the restart).
        config = write_config(tmp_path, fake, {"parent": [[{"sleep": 1, "text": "it is green"}]]},
                              shutdown_grace_seconds=2)
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: fake.open_connections, timeout=15)
            await fake.push_dm("U1", "is the build green?")
            await fake.wait_for(lambda: bot_texts(fake) == ["_working…_"], timeout=15)
            fake.bot_token_revoked = True  # the app uninstalled mid-turn: Socket Mode, on the app token, stays up
            await fake.wait_for(lambda: [c for c in fake.calls_to("chat.postMessage")
                                         if c.params.get("text") == "it is green"], timeout=15)
        finally:
            proc.send_signal(signal.SIGTERM)
            await proc.wait()

        fake.bot_token_revoked = False  # reinstalled, and the gateway restarted with the token
        # Its deletion was refused too: the placeholder goes once Slack takes the token again.
        assert await run_until(fake, config, tmp_path, lambda: "it is green" in bot_texts(fake),
                               lambda: bot_texts(fake) == ["it is green"]) == 0


async def leave_a_placeholder_slack_refused_to_delete(fake: FakeSlack, tmp_path: Path) -> Path:
    """A gateway whose placeholder's deletion Slack refused for a revoked token after the reply went
    out, stopped: the config to start it again with."""
    config = write_config(tmp_path, fake, {"parent": [[{"sleep": 1, "text": "it is green"}]]})
    deleting = fake.hold("chat.delete")
    proc, url = await start(config, tmp_path)
    try:
        await fake.wait_for(lambda: fake.open_connections, timeout=15)
        await fake.push_dm("U1", "is the build green?")
        await fake.wait_for(lambda: fake.calls_to("chat.delete") and "it is green" in bot_texts(fake), timeout=15)
        fake.bot_token_revoked = True  # revoked between the reply and the placeholder's deletion
        deleting.set()
        await refused(url)
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
    assert bot_texts(fake) == ["_working…_", "it is green"]
    return config


async def test_a_placeholder_slack_refused_to_delete_after_the_reply_went_out_is_deleted_after_a_restart(tmp_path):
    # The reply went out before the token was revoked: nothing of the conversation was left to send
    # or to run again after the restart, so the next start did not look there, and it stayed for good.
    async with FakeSlack() as fake:
        config = await leave_a_placeholder_slack_refused_to_delete(fake, tmp_path)
        fake.bot_token_revoked = False  # reinstalled, and the gateway restarted with the token
        assert await run_until(fake, config, tmp_path, lambda: bot_texts(fake) == ["it is green"]) == 0


async def test_a_stop_before_the_clean_up_ran_leaves_the_placeholder_to_the_next_start(tmp_path):
    # The start forgot the conversation before its clean-up had run: stopped in its first moments,
    # the gateway left the placeholder in the chat for good.
    async with FakeSlack() as fake:
        config = await leave_a_placeholder_slack_refused_to_delete(fake, tmp_path)
        fake.bot_token_revoked = False
        looking = fake.hold("conversations.history")  # the clean-up's lookup, unanswered
        assert await run_until(fake, config, tmp_path, lambda: fake.calls_to("conversations.history")) == 0
        assert bot_texts(fake) == ["_working…_", "it is green"]

        looking.set()
        assert await run_until(fake, config, tmp_path, lambda: bot_texts(fake) == ["it is green"]) == 0


async def test_a_message_sent_while_the_gateway_was_killed_is_answered_once_after_the_restart(tmp_path):
    # Slack gives up on an event after a few retries over a few minutes: a message sent to a gateway
    # down longer than that came as no event, and went unanswered for good.
    async with FakeSlack(give_up_after=0.0) as fake:
        config = write_config(tmp_path, fake, {"parent": [[{"text": "hello to you"}]]})
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: fake.open_connections, timeout=15)
            await fake.push_dm("U1", "hello")
            await fake.wait_for(lambda: bot_texts(fake) == ["hello to you"], timeout=15)
            await replies_recorded(tmp_path)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        await fake.wait_for(lambda: not fake.open_connections, timeout=15)
        await fake.push_dm("U1", "are you there?")

        write_config(tmp_path, fake, {"parent": [[{"text": "yes, back now"}]]})
        await run_until(fake, config, tmp_path, lambda: fake.given_up,
                        lambda: bot_texts(fake) == ["hello to you", "yes, back now"])
    assert len([c for c in fake.calls_to("chat.postMessage") if c.params.get("text") == "yes, back now"]) == 1
