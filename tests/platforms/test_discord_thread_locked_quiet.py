"""A thread known locked (`discord_locked.LockedThreads`) takes no "typing" and no edit of the bot's messages there:
Discord refuses both (403, 50083), every refusal counts toward barring the bot's address (10,000 in 10 minutes), and
a turn refreshes its typing every few seconds, its card at every step. The edit is refused without a call, final as
Discord's refusal is. Real discord.py in `DiscordAdapter` against the loopback `FakeDiscord`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from platforms.base import Forbidden, Outbound
from platforms.discord import TYPING, DiscordAdapter
from platforms.discord_locked import RECHECK_SECONDS
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord
from tests.platforms.locked_thread import CHANNEL, POST, THREAD, Clock, asked_in_thread

EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"

fake = fake_discord()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def started(fake: FakeDiscord, clock: Clock) -> AsyncIterator[tuple[DiscordAdapter, str, str]]:
    """An adapter that has heard Bob ask in ``THREAD`` and posted its card there; his question's id, the card's."""
    async with asked_in_thread(fake, clock) as (adapter, asked, _):
        card = await adapter.send(part("⏳ Thinking", "card", kind="notice"))
        yield adapter, asked, card.message_id


def part(text: str, key: str, kind: str = "reply", asked: str | None = None) -> Outbound:
    return Outbound(chat_id=str(CHANNEL), thread_id=str(THREAD), text=text, kind=kind,  # type: ignore[arg-type]
                    idempotency_key=key, reply_to=asked)


def in_thread(fake: FakeDiscord, route: str) -> list[int]:
    """The statuses of the bot's calls on ``route`` in ``THREAD``."""
    return [c.status for c in fake.calls_to(route) if c.path.startswith(f"/channels/{THREAD}/")]


async def lock(fake: FakeDiscord, adapter: DiscordAdapter, locked: bool = True) -> None:
    """Until discord.py's copy of ``THREAD`` says it is (un)locked, as Discord announced it."""
    fake.lock_thread(THREAD, locked=locked)
    await fake.wait_for(lambda: getattr(adapter._client.get_channel(THREAD), "locked", None) is locked)


async def test_a_thread_whose_answer_was_moved_takes_no_typing_and_no_edit(fake, started):
    adapter, asked, card = started
    await lock(fake, adapter)
    await adapter.send(part("about 3 MB", "turn-1/0", asked=asked))  # refused, moved: the thread is known locked
    for _ in range(3):  # a turn's refreshes
        await adapter.typing(str(CHANNEL), str(THREAD))
    for n in range(3):  # its card's steps, and its end
        with pytest.raises(Forbidden, match=f"thread {THREAD} is locked"):
            await adapter.edit(str(CHANNEL), str(THREAD), card, f"⏳ step {n}")
    assert in_thread(fake, TYPING) == [] and in_thread(fake, EDIT) == []  # were [403] * 3 each
    assert in_thread(fake, POST) == [200, 403]  # the card before the lock, the answer's one refusal
    assert fake.bot_messages(THREAD)[0].content == "⏳ Thinking"


async def test_a_refused_typing_makes_the_thread_known_locked_its_answers_still_tried_once(fake, started):
    adapter, asked, card = started
    await lock(fake, adapter)
    with pytest.raises(Forbidden, match="50083"):
        await adapter.typing(str(CHANNEL), str(THREAD))
    await adapter.typing(str(CHANNEL), str(THREAD))
    with pytest.raises(Forbidden, match=f"thread {THREAD} is locked"):
        await adapter.edit(str(CHANNEL), str(THREAD), card, "✓ Done")
    assert in_thread(fake, TYPING) == [403] and in_thread(fake, EDIT) == []
    # Not moved for a refused typing: only an answer refused there learns whether the channel may read it.
    await adapter.send(part("about 3 MB", "turn-1/0", asked=asked))
    await adapter.send(part("and more", "turn-1/1"))
    assert in_thread(fake, POST) == [200, 403]
    assert [m.content.split("\n", 1)[1] for m in fake.bot_messages(CHANNEL)] == ["about 3 MB", "and more"]


async def test_a_refused_edit_makes_the_thread_known_locked(fake, started):
    adapter, _, card = started
    await lock(fake, adapter)
    with pytest.raises(Forbidden, match="50083"):
        await adapter.edit(str(CHANNEL), str(THREAD), card, "⏳ step 1")
    with pytest.raises(Forbidden, match=f"thread {THREAD} is locked"):
        await adapter.edit(str(CHANNEL), str(THREAD), card, "⏳ step 2")
    await adapter.typing(str(CHANNEL), str(THREAD))
    assert in_thread(fake, EDIT) == [403] and in_thread(fake, TYPING) == []


async def test_unlocked_or_after_a_while_the_thread_takes_typing_and_edits_again(fake, started, clock: Clock):
    adapter, asked, card = started
    await lock(fake, adapter)
    await adapter.send(part("about 3 MB", "turn-1/0", asked=asked))
    clock.now += RECHECK_SECONDS  # its unlock missed: tried again, refused, known locked again
    with pytest.raises(Forbidden, match="50083"):
        await adapter.typing(str(CHANNEL), str(THREAD))
    await adapter.typing(str(CHANNEL), str(THREAD))
    assert in_thread(fake, TYPING) == [403]

    await lock(fake, adapter, locked=False)
    await adapter.typing(str(CHANNEL), str(THREAD))
    await adapter.edit(str(CHANNEL), str(THREAD), card, "✓ Done")
    assert in_thread(fake, TYPING) == [403, 204] and in_thread(fake, EDIT) == [200]
    assert fake.bot_messages(THREAD)[0].content == "✓ Done"
