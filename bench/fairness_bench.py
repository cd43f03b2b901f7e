"""Fair delivery when many chats talk at once, on Telegram (issue: fairness across chats).

The outbox with the real aiogram client against `FakeTelegram`, whose flood control (one write a second
per chat, 30 a second overall, edits counted) and the adapter's overall rate run on one fake clock, moved
a quarter second at a time once nothing is on its way to the fake. Prints, in fake seconds:

- a long answer (40 parts) in one chat and 30 other chats' one-line answers a moment later: the worst
  short answer's delay beside it and alone, and that delay as a share of the long answer's own time
  (0: no chat waits behind another's parts; 1: behind all of them);
- a 429 with ``retry_after`` in one chat: the worst delay of the other chats' answers sent meanwhile;
- progress cards edited every second in N chats, and 10 other chats' answers ready at once: the worst
  delay of those answers and of the answers in the cards' own chats (a card's edit already waiting in the
  bot's overall line steps aside for its chat's answer: the bot's overall rate alone bounds that delay, all
  N + 10 answers in turn, given beside it), and the cards not showing their newest state at the end;
- whether each chat's parts reached it whole and in order; and the 429s drawn (the fake's own counting
  of the overall window can differ from the adapter's by a step of the clock).

Run: .venv/bin/python bench/fairness_bench.py
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.testing import FakeClock  # noqa: E402
from gateway.outbox import Outbox  # noqa: E402
from gateway.store import GatewayStore  # noqa: E402
from platforms.fakes.telegram import FakeTelegram  # noqa: E402
from platforms.pacing import AccountRate  # noqa: E402
from platforms.telegram import BOT_WRITES_PER_SECOND, TelegramAdapter  # noqa: E402
from tests.clock_steps import arrived  # noqa: E402

STEP = 0.25
LONG = "\n\n".join(f"Part {n:02} " + "x" * 3000 for n in range(40))
"""Forty paragraphs, each near a Telegram message's limit: forty parts."""


class Rig:
    """A fake Telegram with its limits on, an adapter and an outbox, all on one manual fake clock."""

    async def __aenter__(self) -> Rig:
        self.fake = await FakeTelegram().__aenter__()
        self.clock = FakeClock(autojump=False)
        self.flood = self.fake.enforce_flood_limits(self.clock)
        self.adapter = TelegramAdapter(self.fake.token, api_base=self.fake.base_url, bot_rate=AccountRate(
            BOT_WRITES_PER_SECOND, 1.0, clock=self.clock.monotonic, sleep=self.clock.sleep))
        self._dir = tempfile.TemporaryDirectory()
        self.store = GatewayStore(Path(self._dir.name) / "state.db", clock=self.clock)
        self.outbox = Outbox(self.store.outbox, {"telegram": self.adapter}, clock=self.clock,
                             rng=random.Random(1), max_parts=lambda _: 0)
        await self.outbox.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.outbox.close()
        self.store.close()
        await self.adapter.stop()
        await self.fake.__aexit__(*exc)
        self._dir.cleanup()

    async def quiet(self) -> None:
        """Until nothing reaches the fake for a moment and nothing is on its way there."""
        last = None
        while True:
            await arrived(self.fake)
            await asyncio.sleep(0.005)
            now = (len(self.fake.calls), self.fake.in_flight)
            if now == last and not self.fake.in_flight:
                return
            last = now

    async def tick(self) -> None:
        await self.quiet()
        self.clock.advance(STEP)

    async def until_idle(self) -> None:
        while not self.outbox.idle:
            await self.tick()
        await self.quiet()

    def sends_after(self, since: float, chats) -> list[float]:
        return [w.at - since for w in self.flood.writes if w.chat_id in chats and w.method == "sendMessage"]


async def long_beside_short(with_long: bool) -> tuple[float, float, bool, int]:
    """(worst short answer's delay, the long answer's time, whether its parts came whole and in order, 429s)."""
    async with Rig() as rig:
        start = rig.clock.monotonic()
        if with_long:
            rig.outbox.enqueue("telegram", "1", None, LONG, kind="reply", key="long")
            await rig.quiet()
        asked = rig.clock.monotonic()
        shorts = {str(c) for c in range(2, 32)}
        for chat in shorts:
            rig.outbox.enqueue("telegram", chat, None, f"short answer {chat}", kind="reply", key=f"short-{chat}")
        await rig.until_idle()
        long_at = rig.sends_after(start, {"1"})
        whole = not with_long or [m["text"][:7] for m in rig.fake.messages["1"]] == [f"Part {n:02}" for n in range(40)]
        return max(rig.sends_after(asked, shorts)), max(long_at, default=0.0), whole, len(rig.flood.refused)


async def one_chat_refused() -> tuple[float, float]:
    """(the refused chat's next send, the worst other chat's answer), after a 429 of 7 s in one chat."""
    async with Rig() as rig:
        rig.fake.fail_next("sendMessage", 429, retry_after=7)
        rig.outbox.enqueue("telegram", "1", None, "refused first", kind="reply", key="refused")
        await rig.fake.wait_for(lambda: rig.fake.calls_to("sendMessage"))
        await rig.quiet()
        asked = rig.clock.monotonic()
        others = {str(c) for c in range(2, 12)}
        for chat in others:
            rig.outbox.enqueue("telegram", chat, None, f"answer {chat}", kind="reply", key=f"answer-{chat}")
        await rig.until_idle()
        return max(rig.sends_after(asked, {"1"})), max(rig.sends_after(asked, others))


async def card_storm(cards: int, seconds: float = 5.0) -> tuple[float, float, int, int]:
    """(worst answer in a chat without a card, worst in a card's chat, edits sent, cards not showing their newest
    state), cards edited every second."""
    async with Rig() as rig:
        card_chats = [str(1000 + c) for c in range(cards)]
        for chat in card_chats:
            rig.outbox.enqueue("telegram", chat, None, "⏳ Working", kind="notice", key=f"card-{chat}", silent=True)
        start, edited, asked = rig.clock.monotonic(), 0, None
        others = {str(c) for c in range(1, 11)}
        while asked is None or not rig.outbox.idle:
            if edited <= rig.clock.monotonic() - start and asked is None:
                edited += 1
                for chat in card_chats:
                    rig.outbox.enqueue_edit("telegram", chat, None, f"card-{chat}:0", f"⏳ Working: step {edited}",
                                            key=f"edit-{chat}-{edited}")
            if asked is None and rig.clock.monotonic() - start >= seconds:
                asked = rig.clock.monotonic()
                for chat in [*others, *card_chats]:
                    rig.outbox.enqueue("telegram", chat, None, f"answer {chat}", kind="reply", key=f"answer-{chat}")
            await rig.tick()
        edits = sum(1 for w in rig.flood.writes if w.method == "editMessageText")
        own = rig.sends_after(asked, set(card_chats))
        stale = sum(1 for chat in card_chats if rig.fake.messages[chat][0]["text"] != f"⏳ Working: step {edited}")
        return max(rig.sends_after(asked, others)), max([a for a in own if a >= 0], default=0.0), edits, stale


async def main() -> None:
    alone, _, _, refused_alone = await long_beside_short(False)
    beside, long_took, whole, refused = await long_beside_short(True)
    print(f"30 short answers alone: worst delay {alone:.2f} s; beside a 40-part answer: {beside:.2f} s"
          f" (the long answer took {long_took:.0f} s; head-of-line share {beside / long_took:.3f});"
          f" parts whole and in order: {whole}; 429s {refused_alone + refused}")
    refused_next, others = await one_chat_refused()
    print(f"a 429 of 7 s in one chat: its next send after {refused_next:.2f} s,"
          f" the 10 other chats' worst {others:.2f} s")
    for cards in (0, 20, 60, 120):
        other, own, edits, stale = await card_storm(cards)
        floor = (cards + 10 - 1) // BOT_WRITES_PER_SECOND
        print(f"{cards:3} cards edited every second: answers in other chats worst {other:.2f} s,"
              f" in the cards' chats worst {own:.2f} s (the bot's rate alone: {floor} s; {edits} edits sent,"
              f" {stale} cards left stale)")


if __name__ == "__main__":
    asyncio.run(main())
