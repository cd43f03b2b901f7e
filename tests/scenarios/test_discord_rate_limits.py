"""A busy Discord channel under Discord's rate limits, end to end: one member's turn fans out a
background batch of ten subagents whose card changes as each finishes, another member asks
questions in the same channel meanwhile, and the results come back split into parts. The fake
enforces a bucket per channel route with Discord's ``X-RateLimit-*`` headers and 429s (scaled
down to 5 per 2 s so the test is quick: discord.py waits on the real clock), and discord.py
keeps to the buckets itself: nothing is lost or doubled, the client never reconnects, and the
card's edits are coalesced while discord.py holds the channel, not queued one per change.
"""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes._discord_limits import Window
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.scenarios.test_telegram_flood import GOALS, QUESTIONS, child, final_answer, parent

GUILD, CHANNEL, ALICE, BOB = 500, 600, 42, 43
SILENT = 1 << 12
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"


fake = fake_discord()


async def test_a_fan_out_in_a_busy_channel_loses_nothing_doubles_nothing_and_coalesces_the_card(fake, tmp_path):
    limits = fake.enforce_rate_limits(Window(5, 2.0))  # Discord's 5 per 5 s, scaled down
    config = make_config(tmp_path, platforms={"discord": {"allow_all": True}}, display={"progress_delay": 0.2})
    model = ScriptedModel({"parent": parent, "leaf": child})
    gateway = await start_gateway(config, [adapter_for(fake)], model=model)
    try:
        fake.push_guild_message(GUILD, CHANNEL, ALICE, "please fan out over the sources", mention_bot=True)
        for goal in GOALS:
            await model.reached(goal)
        said = lambda: fake.bot_messages(CHANNEL)  # noqa: E731
        card = await fake.wait_for(lambda: next((m for m in said() if "0 of 10 done" in m.content), None))
        children = gateway.host.children
        child_for = {c.goal: c.subagent_id for s in gateway.sessions for c in children.children(s.session_id)}
        for n, goal in enumerate(GOALS):
            if n % 2:  # bob asks meanwhile, while the card keeps changing: answered once the channel lets it through
                answer = f"Answer to {QUESTIONS[n // 2]!r}"
                fake.push_guild_message(GUILD, CHANNEL, BOB, QUESTIONS[n // 2], mention_bot=True)
                await fake.wait_for(lambda: any(m.content == answer for m in said()), timeout=10.0)
            model.release(goal)
            await children.wait_finished([child_for[goal]])
            if n == 5:  # the card follows them: it shows those done before the rest finish
                await fake.wait_for(lambda: "6 of 10 done" in card.content, timeout=10.0)
        parts = lambda: [m.content for m in said() if m.content.startswith("Finding")]  # noqa: E731
        await fake.wait_for(lambda: "\n\n".join(parts()) == final_answer() and card.content.startswith("✓"),
                            timeout=30.0)
        await settled(gateway)

        answers = [m.content for m in said() if not m.flags & SILENT]
        assert answers[0] == "On it: ten subagents are surveying the sources."
        assert [a for a in answers if a.startswith("Answer")] == [f"Answer to {q!r}" for q in QUESTIONS]
        assert "\n\n".join(parts()) == final_answer() and len(parts()) > 1  # whole, in order
        assert len(answers) == 1 + len(QUESTIONS) + len(parts())  # nothing lost, nothing twice
        assert card.content.startswith("✓ Done in") and card.content.endswith("· 10 subagents")
        card_edits = [c for c in fake.calls_to(EDIT) if c.path.endswith(f"/{card.id}")]
        assert len(card_edits) < len(GOALS)  # coalesced: not one per change, while the channel is held
        assert len(limits.calls) > 10 and fake.live_connections == 1  # limited, and never reconnected
        print(f"\n{len(limits.calls)} channel requests, {len(card_edits)} card edits, "
              f"{len(limits.refused)} 429s: {limits.refused}")
    finally:
        await gateway.stop(grace=0)
        await join_heartbeat_threads()
