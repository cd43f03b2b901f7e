"""A Discord thread a moderator locks while the bot's turn runs there, its progress card shown: the answer goes to the
thread's channel (`platforms.discord_locked`), and the card's later edits, which Discord would refuse one by one (each
refusal counted toward barring the bot), are refused without a call, final at once, logged once: the card reads as it
did when the thread locked. The real discord.py client inside `DiscordAdapter` against `FakeDiscord`, with the real
`Gateway`."""

from __future__ import annotations

import logging

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

GUILD, CHANNEL, THREAD, BOB = 500, 600, 701, 42

fake = fake_discord()


def config(tmp_path):
    (tmp_path / "state" / "workspace").mkdir(parents=True, exist_ok=True)
    (tmp_path / "state" / "workspace" / "notes.txt").write_text("3 MB")
    return make_config(tmp_path, platforms={"discord": {"allow_all": True}}, agent={"toolsets": ["file"]},
                       display={"progress": "card", "progress_delay": 0})


async def test_a_card_in_a_thread_locked_mid_turn_is_left_as_it_is_without_a_refused_call(fake, tmp_path, caplog):
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}
    model = ScriptedModel({"parent": [[{**read, "wait": "bob"}, read, {"text": "answer for bob"}]]})
    gateway = await start_gateway(config(tmp_path), [adapter_for(fake)], model=model)
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True, thread_id=THREAD)
        await model.reached("bob")
        [card] = await fake.wait_for(lambda: fake.bot_messages(THREAD))
        fake.lock_thread(THREAD)
        model.release("bob")
        await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
        await join_heartbeat_threads()
    assert [m.content.split("\n", 1)[1] for m in fake.bot_messages(CHANNEL)] == ["answer for bob"]
    assert card.content.startswith("⏳")
    in_thread = [(c.method, c.status) for c in fake.calls if c.path.startswith(f"/channels/{THREAD}/")
                 and c.method in ("POST", "PATCH") and not c.path.endswith("/typing")]
    # The card; a step's edit may have gone out (refused) before the answer did; the answer's one refusal. Then no
    # call: the card's end was refused by the adapter (was a PATCH 403 more).
    assert in_thread[0] == ("POST", 200) and in_thread[-1] == ("POST", 403), in_thread
    assert in_thread[1:-1] in ([], [("PATCH", 403)]), in_thread
    failed = [r for r in caplog.records if r.name == "gateway.outbox" and "failed" in r.getMessage()]
    assert failed and all(r.levelno == logging.WARNING for r in failed), [r.getMessage() for r in failed]
    assert len(failed) == len(in_thread) - 1 and f"thread {THREAD} is locked" in failed[-1].getMessage()
