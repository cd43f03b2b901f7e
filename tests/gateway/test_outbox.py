"""The outbox: journal, split, send once in per-chat order, retry, fall back, survive restarts."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import sqlite3
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable

import pytest

from agent.testing import FakeClock
from agent.testing.clock import EPOCH
from gateway.credential_hold import FIRST_PROBE
from gateway.outbox import Outbox, OutboxClosed
from gateway.splitting import split_text
from gateway.store import GatewayStore, NewMessage
from platforms.base import (
    BadRequest,
    Closed,
    DisplayTier,
    EditUnsupported,
    Forbidden,
    MessageTooLong,
    NetworkError,
    NotFound,
    Outbound,
    RateLimited,
    Sent,
    Unauthorized,
    utf16_length,
)
from platforms.fakes._waiting import wait_until
from platforms.pacing import Pacing

WAIT = 5.0  # seconds of real time an event-driven wait may take before the test fails (2 s was short on a loaded box)


class FakeAdapter:
    """Records every call (failed ones too) with the clock's time; fails as scripted."""

    tier = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=True)
    typing_interval = 5.0

    def __init__(self, name: str = "fake", *, text_limit: int = 100, measure: Callable[[str], int] = len,
                 send_interval: float = 0.0, edit_interval: float = 0.0, clock: FakeClock | None = None,
                 accept_limit: int | None = None) -> None:
        self.name, self.text_limit, self._measure = name, text_limit, measure
        self._pacing = Pacing(send_interval, edit_interval)
        self.clock = clock
        self.accept_limit = accept_limit
        """The platform's real limit, when it is stricter than the declared one (MessageTooLong)."""
        self.calls: list[tuple[str, str, str, float]] = []  # (op, chat_id, text, time)
        self.sent: list[tuple[Outbound, str, float]] = []  # (message, message_id, time), successes only
        self.messages: dict[str, str] = {}  # message id -> the text the chat shows now
        self.scripts: dict[str | None, deque[BaseException]] = {}
        self.gate = asyncio.Event()
        self.gate.set()
        self._changed = asyncio.Event()
        self._ids = itertools.count(1)

    def measure(self, text: str) -> int:
        return self._measure(text)

    def pacing(self, chat_id: str) -> Pacing:
        return self._pacing

    def fail_next(self, *errors: BaseException, chat: str | None = None) -> None:
        """Raise these on the next calls (for ``chat`` only, if given)."""
        self.scripts.setdefault(chat, deque()).extend(errors)

    async def _call(self, op: str, chat_id: str, text: str) -> None:
        self.calls.append((op, chat_id, text, self.clock.now if self.clock else 0.0))
        self._changed.set()
        await self.gate.wait()
        for script in (self.scripts.get(chat_id), self.scripts.get(None)):
            if script:
                raise script.popleft()
        if self.accept_limit is not None and len(text) > self.accept_limit:
            raise MessageTooLong("message is too long", method=op, chat_id=chat_id)

    async def send(self, message: Outbound) -> Sent:
        await self._call("send", message.chat_id, message.text)
        message_id = f"m{next(self._ids)}"
        self.messages[message_id] = message.text
        self.sent.append((message, message_id, self.clock.now if self.clock else 0.0))
        self._changed.set()
        return Sent(message_id)

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        await self._call("edit", chat_id, text)
        if message_id not in self.messages:
            raise NotFound("message to edit not found", method="edit", chat_id=chat_id)
        self.messages[message_id] = text

    async def typing(self, chat_id: str, thread_id: str | None) -> None: ...

    async def idle(self, chat_id: str, thread_id: str | None) -> None: ...

    def texts(self, chat_id: str | None = None) -> list[str]:
        return [m.text for m, _, _ in self.sent if chat_id is None or m.chat_id == chat_id]

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path, clock):
    """The outbox's rows in a gateway store on a temporary file."""
    s = GatewayStore(tmp_path / "state.db", clock=clock)
    yield s.outbox
    s.close()


@pytest.fixture
async def make(store, clock):
    """make(adapter, **outbox options) -> a started Outbox, closed after the test."""
    made: list[Outbox] = []

    async def make(*adapters: FakeAdapter, **kw) -> Outbox:
        kw.setdefault("clock", clock)
        outbox = Outbox(kw.pop("store", store), {a.name: a for a in adapters}, rng=random.Random(7), **kw)
        made.append(outbox)
        await outbox.start()
        return outbox

    yield make
    for outbox in made:
        await outbox.close()


async def sent(outbox: Outbox, key: str) -> str | None:
    return await outbox.wait_sent(key, timeout=WAIT)


# --- the happy path ----------------------------------------------------------------------


async def test_long_text_is_split_journaled_and_sent_in_order(make, store, clock):
    adapter = FakeAdapter(text_limit=40, clock=clock)
    outbox = await make(adapter)
    text = "\n\n".join(f"Paragraph {i}: " + "word " * 5 for i in range(6))
    keys = outbox.enqueue("fake", "c1", "th", text, kind="reply", key="t1:reply", turn_id="t1")
    parts = split_text(text, 40)
    assert keys == [f"t1:reply:{i}" for i in range(len(parts))] and len(parts) > 2
    assert [store.message(k).text for k in keys] == parts  # journaled before anything was sent
    ids = [await sent(outbox, k) for k in keys]
    assert adapter.texts() == parts
    assert ids == [message_id for _, message_id, _ in adapter.sent]
    first = adapter.sent[0][0]
    assert (first.chat_id, first.thread_id, first.kind, first.idempotency_key, first.turn_id, first.sequence) == (
        "c1", "th", "reply", "t1:reply:0", "t1", 0)
    assert [m.sequence for m, _, _ in adapter.sent] == list(range(len(parts)))
    assert [(m["key"], m["status"]) for m in store.turn_messages("fake", "t1")] == [(k, "sent") for k in keys]


async def test_a_text_that_fits_as_counted_waits_for_its_chats_split_under_way(make):
    # Such a text is journaled at once, in no thread and without the chat's lock, unless the
    # chat has a text being split: it never overtakes one the model wrote before it.
    splitting, release = threading.Event(), threading.Event()

    def measure(text: str) -> int:
        if threading.current_thread() is not threading.main_thread():
            splitting.set()
            assert release.wait(WAIT)
        return len(text)

    adapter = FakeAdapter(text_limit=100, measure=measure)
    adapter.counts_characters = True
    outbox = await make(adapter)
    long = "word " * 50
    first = asyncio.ensure_future(outbox.enqueue_long("fake", "c", None, long, kind="reply", key="long"))
    assert await asyncio.to_thread(splitting.wait, WAIT)
    second = asyncio.ensure_future(outbox.enqueue_long("fake", "c", None, "short", kind="reply", key="short"))
    await asyncio.sleep(0.05)
    assert not second.done()
    release.set()
    await asyncio.gather(first, second)
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == [*split_text(long, 100), "short"]


async def test_enqueuing_the_same_key_twice_sends_once(make, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    first = outbox.enqueue("fake", "c1", None, "hello", kind="reply", key="k")
    again = outbox.enqueue("fake", "c1", None, "hello, but generated differently", kind="reply", key="k")
    assert first == again == ["k:0"]
    await sent(outbox, "k:0")
    assert outbox.enqueue("fake", "c1", None, "hello", kind="reply", key="k") == ["k:0"]
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == ["hello"]


async def test_empty_text_journals_nothing(make, store):
    outbox = await make(FakeAdapter())
    assert outbox.enqueue("fake", "c1", None, " \n ", kind="reply", key="k") == []
    assert store.pending_messages() == []


async def test_enqueue_before_start_is_sent_by_start(store, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = Outbox(store, {"fake": adapter}, clock=clock)
    outbox.enqueue("fake", "c1", None, "early", kind="reply", key="k")
    assert adapter.calls == []
    await outbox.start()
    assert await sent(outbox, "k:0") == "m1"
    await outbox.close()


# --- ordering and pacing -----------------------------------------------------------------


async def test_a_429_holds_only_its_own_chat(make, store):
    clock = FakeClock(autojump=False)
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter, clock=clock)
    adapter.fail_next(RateLimited("slow down", retry_after=30), chat="a")
    outbox.enqueue("fake", "a", None, "a1", kind="reply", key="a1")
    await clock.until_sleeping()  # chat a waits out its 429
    outbox.enqueue("fake", "a", None, "a2", kind="reply", key="a2")
    outbox.enqueue("fake", "b", None, "b1", kind="reply", key="b1")
    assert await sent(outbox, "b1:0") is not None  # b is not held up by a
    assert adapter.texts() == ["b1"]
    assert store.message("a1:0").attempts == 1 and store.message("a1:0").next_attempt_at == clock.now + 30
    clock.advance(29.9)
    await asyncio.sleep(0)
    assert adapter.texts() == ["b1"]
    clock.advance(0.1)
    await sent(outbox, "a2:0")
    assert adapter.texts() == ["b1", "a1", "a2"]  # a kept its own order
    assert clock.sleeps == [30]


async def test_retry_after_is_capped(make, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter, max_retry_after=5.0)
    adapter.fail_next(RateLimited("slow down", retry_after=500))
    outbox.enqueue("fake", "c1", None, "hi", kind="reply", key="k")
    assert await sent(outbox, "k:0") is not None
    assert clock.sleeps == [5.0]


async def test_pacing_spaces_sends_within_a_chat_only(make, clock):
    adapter = FakeAdapter(clock=clock, send_interval=2.0)
    outbox = await make(adapter)
    for i in range(3):
        outbox.enqueue("fake", "a", None, f"a{i}", kind="reply", key=f"a{i}")
    outbox.enqueue("fake", "b", None, "b0", kind="reply", key="b0")
    assert await outbox.flush(timeout=WAIT)
    times = {m.text: t for m, _, t in adapter.sent}
    assert times["a1"] - times["a0"] >= 2.0 and times["a2"] - times["a1"] >= 2.0
    assert adapter.texts().index("b0") < adapter.texts().index("a1")  # b did not wait for a's interval


async def test_per_chat_fifo_and_exactly_once_under_random_transient_errors(make, clock, store):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    rng = random.Random(3)
    expected: dict[str, list[str]] = {}
    for i in range(60):
        chat = rng.choice("xyz")
        if rng.random() < 0.3:
            adapter.fail_next(rng.choice([NetworkError("5xx"), RateLimited("429", retry_after=1)]), chat=chat)
        outbox.enqueue("fake", chat, None, f"{chat}{i}", kind="reply", key=f"k{i}")
        expected.setdefault(chat, []).append(f"{chat}{i}")
        if rng.random() < 0.2:
            await asyncio.sleep(0)
    assert await outbox.flush(timeout=WAIT)
    for chat, texts in expected.items():
        assert adapter.texts(chat) == texts
    assert store.pending_messages() == []


# --- failures ----------------------------------------------------------------------------


async def test_network_errors_back_off_then_give_up(make, store, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter, give_up_after={"fake": 20.0})
    adapter.fail_next(*[NetworkError("HTTP 502") for _ in range(100)], chat="a")
    created = clock.now
    outbox.enqueue("fake", "a", None, "doomed", kind="reply", key="a1")
    outbox.enqueue("fake", "a", None, "queued behind", kind="reply", key="a2")
    assert await sent(outbox, "a1:0") is None
    row = store.message("a1:0")
    assert row.status == "failed" and row.last_error == "NetworkError: HTTP 502"
    # 0.5 s doubling with ±25% jitter, the last wait cut short at the deadline, then one last try.
    for i, wait in enumerate(clock.sleeps[:-1]):
        assert 0.5 * 2**i * 0.75 <= wait <= 0.5 * 2**i * 1.25
    assert clock.now == pytest.approx(created + 20.0)
    assert row.attempts == len(clock.sleeps) + 1
    # a2 waited in the queue all that time: it is as old, so its first failure is its last.
    assert await sent(outbox, "a2:0") is None and store.message("a2:0").attempts == 1
    adapter.scripts.clear()
    outbox.enqueue("fake", "a", None, "later", kind="reply", key="a3")
    assert await sent(outbox, "a3:0") is not None  # the chat is not stuck


async def test_a_night_asleep_does_not_count_toward_giving_up(tmp_path, make):
    # The laptop's Wi-Fi goes as its lid closes, mid-send; it wakes 8 h later, and its network
    # takes a few seconds to come back. The reply is not given up on for that first failure (with
    # no late note to go first: a webhook's, or delivery.late_after 0).
    clock = FakeClock(autojump=False)
    state = GatewayStore(tmp_path / "asleep.db", clock=clock)
    store = state.outbox
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter, clock=clock, store=store, give_up_after={"fake": 3600.0})
    adapter.fail_next(NetworkError("network is unreachable"), chat="a")
    outbox.enqueue("fake", "a", None, "the answer", kind="reply", key="a1")
    await clock.until_sleeping()  # backing off after the failure
    clock.jump(8 * 3600)  # suspended: the wall clock goes on, the monotonic one stops
    adapter.fail_next(NetworkError("network is unreachable"), chat="a")
    clock.advance(1)
    await clock.until_sleeping()  # failed again right after waking: it backs off once more
    assert store.message("a1:0").status == "pending"
    clock.advance(2)
    assert await sent(outbox, "a1:0") is not None
    assert adapter.texts("a") == ["the answer"]
    await outbox.close()
    state.close()


async def test_a_part_journaled_before_a_start_counts_only_the_time_it_was_tried_then(tmp_path, make):
    # A reply journaled and tried for ten minutes, then the gateway stopped for a day; it starts at
    # boot, before the network is up. Its first try fails, and it is tried again, not given up on.
    clock = FakeClock(autojump=False)
    before = GatewayStore(tmp_path / "before.db", clock=clock)
    before.outbox.add_messages([NewMessage("r:0", "fake", "a", None, "the answer")])
    (row,) = before.outbox.pending_messages()
    clock.advance(600)
    before.outbox.record_attempt(row.id, "NetworkError: HTTP 502", clock.time() + 30)
    clock.advance(24 * 3600)
    adapter = FakeAdapter(clock=clock)
    adapter.fail_next(NetworkError("network is unreachable"))
    outbox = await make(adapter, clock=clock, store=before.outbox, give_up_after={"fake": 3600.0})
    await clock.until_sleeping()
    assert before.outbox.message("r:0").status == "pending"
    clock.advance(60)
    assert await sent(outbox, "r:0") is not None
    await outbox.close()
    before.close()


async def test_an_adapter_bug_is_retried_like_a_network_error_and_logged_with_its_traceback(make, clock, caplog):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    adapter.fail_next(TypeError("adapter bug"), TypeError("adapter bug"))
    outbox.enqueue("fake", "a", None, "hi", kind="reply", key="k")
    with caplog.at_level(logging.WARNING, logger="gateway"):
        assert await sent(outbox, "k:0") is not None
    assert len(clock.sleeps) == 2
    assert [r.exc_info[0] for r in caplog.records] == [TypeError]


async def test_backoff_is_capped_at_a_minute(make, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    adapter.fail_next(*[NetworkError("down") for _ in range(12)])
    outbox.enqueue("fake", "a", None, "eventually", kind="reply", key="k")
    assert await sent(outbox, "k:0") is not None
    assert max(clock.sleeps) <= 60 * 1.25 and clock.sleeps[-1] >= 60 * 0.75


@pytest.mark.parametrize("error", [Forbidden("bot was blocked"), NotFound("chat not found"), BadRequest("bad")])
async def test_permanent_errors_fail_the_message_and_the_queue_continues(make, store, clock, caplog, error):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    adapter.fail_next(error)
    outbox.enqueue("fake", "c1", None, "private words", kind="reply", key="k1")
    outbox.enqueue("fake", "c1", None, "after", kind="reply", key="k2")
    with caplog.at_level(logging.DEBUG, logger="gateway"):
        assert await sent(outbox, "k1:0") is None
        assert await sent(outbox, "k2:0") is not None
    assert store.message("k1:0").status == "failed" and clock.sleeps == []
    # A chat's refusal is a WARNING; a reply lost otherwise (`BadRequest`) an ERROR.
    warning = next(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert "fake" in warning and "c1" in warning and "k1:0" in warning and type(error).__name__ in warning
    assert not any("private words" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("error", "said"), [
    (Forbidden("Forbidden: bot was blocked by the user"), "Forbidden: bot was blocked by the user"),  # Telegram's
    (Forbidden("Forbidden"), "Forbidden"),
    (Forbidden("Forbiddenness: none"), "Forbidden: Forbiddenness: none"),
    (BadRequest("Bad Request: chat not found"), "BadRequest: Bad Request: chat not found"),
])
async def test_a_failure_names_its_kind_once(make, store, clock, caplog, error, said):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    adapter.fail_next(error)
    outbox.enqueue("fake", "c1", None, "words", kind="reply", key="k1")
    with caplog.at_level(logging.WARNING, logger="gateway"):
        assert await sent(outbox, "k1:0") is None
    assert store.message("k1:0").last_error == said
    assert [r.getMessage() for r in caplog.records] == [f"outbox: fake chat c1: k1:0 failed: {said}"]


async def test_message_too_long_is_resplit_in_place(make, store, clock):
    adapter = FakeAdapter(clock=clock, text_limit=100, accept_limit=30)
    outbox = await make(adapter)
    text = " ".join(f"w{i}" for i in range(30))  # ~90 characters: within the declared limit only
    outbox.enqueue("fake", "c1", None, text, kind="reply", key="k", turn_id="t")
    outbox.enqueue("fake", "c1", None, "after", kind="reply", key="after", turn_id="t")
    first = await sent(outbox, "k:0")
    await sent(outbox, "after:0")
    texts = adapter.texts()
    assert texts[-1] == "after" and len(texts) > 3 and all(len(t) <= 30 for t in texts)
    assert " ".join(texts[:-1]) == text
    assert first == adapter.sent[0][1]
    assert store.message("k:0").op == "split" and store.message("k:0/a").status == "sent"
    assert [m["text"] for m in store.turn_messages("fake", "t")] == texts


async def test_message_too_long_that_cannot_be_split_fails(make, store, clock):
    adapter = FakeAdapter(clock=clock, accept_limit=0)
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "x", kind="reply", key="k")
    assert await sent(outbox, "k:0") is None
    assert store.message("k:0").status == "failed"


async def test_a_platform_without_adapter_leaves_its_rows_pending(make, store):
    store.add_messages([NewMessage("k:0", "gone", "c1", None, "journaled when gone was configured")])
    outbox = await make(FakeAdapter())
    with pytest.raises(KeyError):
        outbox.enqueue("gone", "c1", None, "hi", kind="reply", key="k2")
    assert await outbox.flush(timeout=WAIT)
    assert store.message("k:0").status == "pending"  # sent once that platform is configured again


async def test_a_platform_that_takes_nothing_more_keeps_its_parts_pending_for_the_next_start(tmp_path):
    # `switchboard chat | head -1`: once the terminal's output had gone its reply was retried as a
    # network error, backing off, and the stop's flush waited the whole grace for nothing.
    clock = FakeClock(autojump=False)  # nothing here may wait
    path = tmp_path / "state.db"
    store1 = GatewayStore(path, clock=clock)
    gone, other = FakeAdapter(clock=clock), FakeAdapter("other", clock=clock)
    outbox1 = Outbox(store1.outbox, {"fake": gone, "other": other}, clock=clock)
    await outbox1.start()
    try:
        # Too long first: the piece sent in its place meets the platform's end.
        gone.fail_next(MessageTooLong("too long"), Closed("nothing reads the output"))
        outbox1.enqueue("fake", "a", None, "one two three four five six", kind="reply", key="k")
        outbox1.enqueue("fake", "a", None, "after it", kind="reply", key="r")
        outbox1.enqueue("fake", "b", None, "another chat of it", kind="reply", key="s")
        outbox1.enqueue("other", "a", None, "elsewhere", kind="reply", key="e")
        assert await asyncio.wait_for(outbox1.flush(timeout=3600, give_up_when_held=True), WAIT)
        assert other.texts() == ["elsewhere"] and gone.sent == []
        assert len(gone.calls) == 2  # the platform is not called again in this process
        assert [store1.outbox.message(k).status for k in ("k:0", "k:0/a", "r:0", "s:0")] == ["pending"] * 4
        assert store1.outbox.message("k:0/a").last_error == "Closed: nothing reads the output"
        assert store1.outbox.message("r:0").attempts == 0  # untried, not failed
        assert clock.sleeps == []
    finally:
        await outbox1.close()
        store1.close()

    store2 = GatewayStore(path, clock=clock)
    after = FakeAdapter(clock=clock)
    outbox2 = Outbox(store2.outbox, {"fake": after}, clock=clock)
    await outbox2.start()
    try:
        assert await asyncio.wait_for(outbox2.flush(timeout=WAIT), WAIT)
        assert " ".join(after.texts("a")) == "one two three four five six after it"
        assert after.texts("b") == ["another chat of it"]
        assert store2.outbox.pending_messages() == []
    finally:
        await outbox2.close()
        store2.close()


# --- edits -------------------------------------------------------------------------------


async def test_edit_in_place(make, store, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "still working (1 min)", kind="notice", key="n", turn_id="t", silent=True)
    outbox.enqueue_edit("fake", "c1", None, "n:0", "still working (2 min)", key="n-e1")
    message_id = await sent(outbox, "n:0")
    assert await sent(outbox, "n-e1:0") == message_id
    assert adapter.messages == {message_id: "still working (2 min)"}
    assert [op for op, *_ in adapter.calls] == ["send", "edit"]
    edit = store.message("n-e1:0")
    assert (edit.op, edit.kind, edit.turn_id, edit.silent) == ("edit", "notice", "t", True)


@pytest.mark.parametrize("refusal", [EditUnsupported("no edits here"), NotFound("message gone"), BadRequest("old")])
async def test_refused_edit_sends_anew_and_later_edits_edit_the_new_message(make, store, clock, refusal):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "v1", kind="notice", key="n")
    old = await sent(outbox, "n:0")
    adapter.fail_next(refusal)
    outbox.enqueue_edit("fake", "c1", None, "n:0", "v2", key="e1")
    new = await sent(outbox, "e1:0")
    assert new != old and adapter.messages == {old: "v1", new: "v2"}
    assert store.message("n:0").message_id == new and store.message("e1:0").op == "send"
    outbox.enqueue_edit("fake", "c1", None, "n:0", "v3", key="e2")
    assert await sent(outbox, "e2:0") == new
    assert adapter.messages == {old: "v1", new: "v3"}


async def test_editing_a_message_that_failed_sends_it_and_remembers_it(make, store, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    adapter.fail_next(BadRequest("can't parse entities"))
    outbox.enqueue("fake", "c1", None, "v1", kind="interim", key="n")  # not a progress message: no coalescing
    outbox.enqueue_edit("fake", "c1", None, "n:0", "v2", key="e1")
    outbox.enqueue_edit("fake", "c1", None, "n:0", "v3", key="e2")
    assert await sent(outbox, "n:0") is None
    new = await sent(outbox, "e1:0")
    assert await sent(outbox, "e2:0") == new
    assert adapter.messages == {new: "v3"}
    assert [op for op, *_ in adapter.calls] == ["send", "send", "edit"]


async def test_an_edit_is_retried_on_network_errors(make, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "v1", kind="notice", key="n")
    message_id = await sent(outbox, "n:0")
    adapter.fail_next(NetworkError("reset"))
    outbox.enqueue_edit("fake", "c1", None, "n:0", "v2", key="e1")
    assert await sent(outbox, "e1:0") == message_id
    assert adapter.messages == {message_id: "v2"}


# --- progress messages: coalesced, paced, never ahead of a reply -----------------------------


async def test_newer_progress_edits_replace_pending_ones(make, store, clock):
    adapter = FakeAdapter(clock=clock)
    adapter.gate.clear()
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "card v1", kind="notice", key="card")
    await adapter.until(lambda: len(adapter.calls) == 1)  # the card is going out
    for i in range(2, 6):
        outbox.enqueue_edit("fake", "c1", None, "card:0", f"card v{i}", key=f"edit{i}")
    adapter.gate.set()
    assert await outbox.flush(timeout=WAIT)
    assert [(op, text) for op, _, text, _ in adapter.calls] == [("send", "card v1"), ("edit", "card v5")]
    assert [store.message(f"edit{i}:0").status for i in range(2, 6)] == ["dropped"] * 3 + ["sent"]


async def test_deleting_a_card_that_never_went_out_sends_nothing(make, store, clock):
    adapter = FakeAdapter(clock=clock)
    adapter.gate.clear()
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "answer", kind="reply", key="r")
    await adapter.until(lambda: len(adapter.calls) == 1)
    outbox.enqueue("fake", "c1", None, "card", kind="notice", key="card")
    outbox.enqueue_edit("fake", "c1", None, "card:0", "card, later", key="e1")
    assert outbox.enqueue_delete("fake", "c1", None, "card:0", "✓ Done", key="final") == []
    adapter.gate.set()
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == ["answer"]
    assert store.message("card:0").status == "dropped"


async def test_a_card_withdrawn_before_it_went_out_is_never_sent(make, store, clock):
    adapter = FakeAdapter(clock=clock)
    adapter.gate.clear()
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "an earlier answer", kind="reply", key="r0")
    await adapter.until(lambda: len(adapter.calls) == 1)  # the chat is busy: the card waits its turn
    outbox.enqueue("fake", "c1", None, "card", kind="notice", key="card")
    outbox.enqueue_edit("fake", "c1", None, "card:0", "card, later", key="e1")
    assert outbox.withdraw("fake", "c1", None, "card:0")  # nothing left to finalise
    outbox.enqueue("fake", "c1", None, "the answer", kind="reply", key="r1")
    adapter.gate.set()
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == ["an earlier answer", "the answer"]
    assert [store.message(k).status for k in ("card:0", "e1:0")] == ["dropped", "dropped"]


@pytest.mark.parametrize("card_call", ["succeeds", "is refused"])
async def test_a_card_withdrawn_while_in_the_adapters_hands_is_finalised_only_if_it_went_out(
        make, store, clock, card_call):
    adapter = FakeAdapter(clock=clock)
    adapter.gate.clear()
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "card", kind="notice", key="card")
    await adapter.until(lambda: len(adapter.calls) == 1)  # the card's send is under way
    if card_call == "is refused":
        adapter.fail_next(RateLimited("429", retry_after=5))
    assert not outbox.withdraw("fake", "c1", None, "card:0")  # it may yet reach the chat
    outbox.enqueue_edit("fake", "c1", None, "card:0", "✓ Done", key="final")
    outbox.enqueue("fake", "c1", None, "the answer", kind="reply", key="r")
    adapter.gate.set()
    assert await outbox.flush(timeout=WAIT)
    if card_call == "succeeds":
        assert adapter.texts() == ["card", "the answer"] and adapter.messages["m1"] == "✓ Done"
        assert store.message("card:0").status == "sent"
    else:  # never after the answer: neither the card nor its outcome
        assert adapter.texts() == ["the answer"]
        assert [store.message(k).status for k in ("card:0", "final:0")] == ["dropped", "dropped"]


async def test_a_reply_goes_before_progress_waiting_for_its_edit_interval(make, clock):
    adapter = FakeAdapter(clock=clock, edit_interval=1.0)
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "card v1", kind="notice", key="card")
    await sent(outbox, "card:0")
    outbox.enqueue_edit("fake", "c1", None, "card:0", "card v2", key="e1")
    outbox.enqueue_edit("fake", "c1", None, "card:0", "card v3", key="e2")  # coalesced with e1
    outbox.enqueue("fake", "c1", None, "the answer", kind="reply", key="r")
    assert await outbox.flush(timeout=WAIT)
    ops = [(op, text) for op, _, text, _ in adapter.calls]
    assert ops == [("send", "card v1"), ("send", "the answer"), ("edit", "card v3")]
    times = {text: t for _, _, text, t in adapter.calls}
    assert times["card v3"] - times["card v1"] >= 1.0  # one edit a second per message


async def test_a_429_storm_delays_progress_but_the_reply_goes_first(make, store, clock):
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "card v1", kind="notice", key="card")
    await sent(outbox, "card:0")
    adapter.fail_next(*(RateLimited("429", retry_after=5) for _ in range(3)))
    outbox.enqueue_edit("fake", "c1", None, "card:0", "card v2", key="e1")
    await adapter.until(lambda: len(adapter.calls) == 2)  # refused: the chat waits out 5 s
    outbox.enqueue_edit("fake", "c1", None, "card:0", "card v3", key="e2")  # replaces e1 while limited
    outbox.enqueue("fake", "c1", None, "the answer", kind="reply", key="r")
    assert await outbox.flush(timeout=WAIT)
    # The reply waits out the limit like everything in the chat, but nothing of the card goes first.
    assert [text for _, _, text, _ in adapter.calls] == [
        "card v1", "card v2", "the answer", "the answer", "the answer", "card v3"]
    assert store.message("e1:0").status == "dropped" and store.message("r:0").status == "sent"


async def test_progress_edits_that_failed_then_were_replaced_leave_nothing_behind(make, store):
    # On a flaky network a card's edit fails, and the next state of the card replaces it while
    # it waits to be tried again: each such edit was remembered as "may have gone out", for good.
    clock = FakeClock(autojump=False)
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter, clock=clock)
    chats = [f"c{n}" for n in range(300)]
    for chat in chats:
        outbox.enqueue("fake", chat, None, "card v1", kind="notice", key=f"{chat}-card")
    assert await outbox.flush(timeout=WAIT)
    for chat in chats:
        adapter.fail_next(NetworkError("reset"), chat=chat)
        outbox.enqueue_edit("fake", chat, None, f"{chat}-card:0", "card v2", key=f"{chat}-e1")
    await clock.until_sleeping(len(chats))  # each backs off before trying its edit again
    for chat in chats:
        outbox.enqueue_edit("fake", chat, None, f"{chat}-card:0", "card v3", key=f"{chat}-e2")
    clock.advance(60)
    assert await outbox.flush(timeout=WAIT)
    assert {store.message(f"{chat}-e1:0").status for chat in chats} == {"dropped"}
    assert set(adapter.messages.values()) == {"card v3"}
    assert outbox._sender.remembered == 0


# --- drop, flush, close, restart ------------------------------------------------------------


async def test_drop_marks_pending_messages_of_a_chat(make, store, clock):
    adapter = FakeAdapter(clock=clock)
    adapter.gate.clear()
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "answer", kind="reply", key="r1")
    await adapter.until(lambda: len(adapter.calls) == 1)
    outbox.enqueue("fake", "c1", None, "still working", kind="notice", key="n1")
    outbox.enqueue("fake", "c1", None, "more", kind="reply", key="r2")
    outbox.enqueue("fake", "c2", None, "elsewhere", kind="notice", key="n2")
    assert outbox.drop("fake", "c1", None, lambda row: row.kind == "notice") == 1
    assert await sent(outbox, "n1:0") is None
    adapter.gate.set()
    assert await outbox.flush(timeout=WAIT)
    assert sorted(adapter.texts()) == ["answer", "elsewhere", "more"]
    assert store.message("n1:0").status == "dropped"


async def test_flush_times_out_while_a_chat_is_stuck_and_close_ends_waits(make, clock):
    adapter = FakeAdapter(clock=clock)
    adapter.gate.clear()
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "stuck", kind="reply", key="k")
    assert not await outbox.flush(timeout=0.01)
    waiter = asyncio.ensure_future(outbox.wait_sent("k:0"))
    await asyncio.sleep(0)
    await outbox.close()
    with pytest.raises(OutboxClosed):
        await waiter
    assert store_status(outbox, "k:0") == "pending"  # the next start sends it


async def test_flush_gives_up_at_once_when_every_chat_waits_past_its_timeout(tmp_path):
    # A SIGTERM while the only part left waits out a 429 longer than the stop's grace: nothing can
    # go before the grace ends, and the stop sat the whole grace out for nothing (it goes next start).
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    adapter.fail_next(RateLimited("slow down", retry_after=30), chat="c1")
    outbox = Outbox(store.outbox, {"fake": adapter}, clock=clock)
    await outbox.start()
    try:
        outbox.enqueue("fake", "c1", None, "answer", kind="reply", key="k")
        await clock.until_sleeping(lasting=30)
        adapter.gate.clear()
        outbox.enqueue("fake", "c2", None, "elsewhere", kind="reply", key="e")  # in flight: waited for
        await adapter.until(lambda: len(adapter.calls) == 2)
        async def flush_and_what_was_sent() -> tuple[bool, list[str]]:
            return await outbox.flush(timeout=10, give_up_when_held=True), adapter.texts()

        flushing = asyncio.ensure_future(flush_and_what_was_sent())
        adapter.gate.set()  # the flush looks first (it was scheduled first), while the send is in flight
        # It waited for that send, then gave up on the held chat: the send had gone when it ended.
        assert await asyncio.wait_for(flushing, WAIT) == (False, ["elsewhere"])
        assert not await asyncio.wait_for(outbox.flush(timeout=10, give_up_when_held=True), WAIT)  # not 10 s of it
        assert not await asyncio.wait_for(outbox.flush(timeout=29, give_up_when_held=True), WAIT)
        assert store_status(outbox, "k:0") == "pending"  # the next start sends it
        flushing = asyncio.ensure_future(outbox.flush(timeout=31, give_up_when_held=True))  # due before: waited
        asyncio.get_running_loop().call_soon(clock.advance, 30)  # once the flush has looked: it runs first
        assert await asyncio.wait_for(flushing, WAIT)
        assert adapter.texts() == ["elsewhere", "answer"]
    finally:
        await outbox.close()
        store.close()


@contextlib.asynccontextmanager
async def refused_credentials(tmp_path) -> AsyncIterator[tuple[Outbox, FakeAdapter, FakeClock]]:
    """An outbox on a manual clock whose platform refused the bot's credentials for the reply ``k``
    in chat c1: held, its next try due in `FIRST_PROBE`."""
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    adapter.fail_next(Unauthorized("token revoked"), chat="c1")
    outbox = Outbox(store.outbox, {"fake": adapter}, clock=clock)
    await outbox.start()
    try:
        outbox.enqueue("fake", "c1", None, "answer", kind="reply", key="k")
        await clock.until_sleeping(lasting=FIRST_PROBE)
        yield outbox, adapter, clock
    finally:
        await outbox.close()
        store.close()


async def test_flush_gives_up_at_once_while_the_platform_refuses_the_bots_credentials(tmp_path):
    # A SIGTERM to restart with a fixed token while the old one is refused: every chat waits for the
    # next probe (`gateway.credential_hold`), so nothing can go before the grace ends either.
    async with refused_credentials(tmp_path) as (outbox, adapter, clock):
        outbox.enqueue("fake", "c2", None, "elsewhere", kind="reply", key="e")  # held behind the probe
        await clock.until_sleeping(lasting=FIRST_PROBE, count=2)
        # before, the held chats slept where the flush could not see them: it sat out its timeout
        assert not await asyncio.wait_for(outbox.flush(timeout=4, give_up_when_held=True), 2)
        assert adapter.texts() == []
        assert store_status(outbox, "k:0") == store_status(outbox, "e:0") == "pending"  # the next start sends them


async def test_a_clock_stepped_back_while_the_credentials_are_refused_does_not_put_off_the_next_try(tmp_path):
    async with refused_credentials(tmp_path) as (outbox, _, clock):
        clock.jump(-3600)  # NTP steps the wall clock back an hour; the token is fixed meanwhile
        clock.advance(FIRST_PROBE)
        assert await sent(outbox, "k:0") is not None  # tried when due, not an hour later


def machine_clock() -> FakeClock:
    """Clocks as a machine's read: the monotonic one from its boot an hour ago, the wall one the date."""
    clock = FakeClock(start=3600.0)
    clock.jump(EPOCH - 3600.0)
    return clock


async def test_only_the_time_held_for_a_refused_token_is_added_to_the_retry_window(tmp_path):
    # A minute of network errors, then the token refused for one probe's wait, then 429s: the part
    # gives up after its 120 s plus the 5 s held, not plus the whole minute before the hold too.
    clock = machine_clock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    adapter.fail_next(*[NetworkError("HTTP 502")] * 7, Unauthorized("token revoked"),
                      *[RateLimited("429", retry_after=10) for _ in range(100)])
    outbox = Outbox(store.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7), give_up_after={"fake": 120.0})
    await outbox.start()
    try:
        journaled = clock.monotonic()
        outbox.enqueue("fake", "c1", None, "answer", kind="reply", key="k")
        assert await sent(outbox, "k:0") is None
        # (at the first 429 past that, each blocking the chat its 10 s)
        assert journaled + 120.0 + FIRST_PROBE <= clock.monotonic() <= journaled + 120.0 + FIRST_PROBE + 10.0
    finally:
        await outbox.close()
        store.close()


async def test_a_restart_while_held_does_not_count_the_time_the_gateway_was_stopped_as_held(tmp_path):
    # Held a minute, stopped for a day, started with the fixed token: the part's 120 s for other
    # failures (429s here) count from then, as they would have without the restart.
    clock = machine_clock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    adapter.fail_next(*[Unauthorized("token revoked") for _ in range(1000)])
    outbox = Outbox(store.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7), give_up_after={"fake": 120.0})
    await outbox.start()
    outbox.enqueue("fake", "c1", None, "answer", kind="reply", key="k")
    await wait_until(lambda: len(adapter.calls) >= 5, WAIT)
    await outbox.close()
    store.close()
    adapter.scripts.clear()
    clock.advance(24 * 3600)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter.fail_next(*[RateLimited("429", retry_after=10) for _ in range(10_000)])
    outbox = Outbox(store.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7), give_up_after={"fake": 120.0})
    started = clock.monotonic()
    await outbox.start()
    try:
        await wait_until(lambda: store_status(outbox, "k:0") != "pending" or clock.monotonic() > started + 3600, WAIT)
        assert store_status(outbox, "k:0") == "failed"
        assert clock.monotonic() <= started + 120.0 + 10.0
    finally:
        await outbox.close()
        store.close()


async def test_wait_sent_times_out(make):
    outbox = await make(FakeAdapter())
    with pytest.raises(TimeoutError):
        await outbox.wait_sent("never:0", timeout=0.01)


def store_status(outbox: Outbox, key: str) -> str:
    return outbox._store.message(key).status


async def test_a_new_message_is_marked_tried_durably_before_the_adapter_sees_it(tmp_path, make, store, clock):
    # After a restart only parts marked tried are looked up (`platforms.base.FindsSent`): one posted
    # unmarked would go out twice. A crash between the mark and the call costs a lookup finding nothing.
    # One journaled into an idle chat is journaled tried, costing no commit of its own.
    committed: list[tuple[str, int]] = []

    class Checking(FakeAdapter):
        async def send(self, message: Outbound) -> Sent:
            with contextlib.closing(sqlite3.connect(tmp_path / "state.db")) as db:  # what a crash now leaves
                committed.append(db.execute("SELECT key, tried FROM gateway_outbox WHERE key=?",
                                            (message.idempotency_key,)).fetchone())
            return await super().send(message)

    adapter = Checking(clock=clock)
    adapter.gate.clear()
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "first", kind="reply", key="a")  # goes at once: journaled tried
    outbox.enqueue("fake", "c1", None, "second", kind="reply", key="b")
    assert [store.message(k).tried for k in ("a:0", "b:0")] == [True, False]
    await adapter.until(lambda: len(adapter.calls) == 1)
    assert not store.message("b:0").tried  # it waits its turn untried: marked only right before its call
    outbox.enqueue_edit("fake", "c1", None, "a:0", "first, edited", key="e")
    adapter.gate.set()
    assert await outbox.flush(timeout=WAIT)
    assert committed == [("a:0", 1), ("b:0", 1)]
    assert not store.message("e:0").tried  # an edit puts nothing new in the chat: nothing to look up


async def test_restart_sends_each_pending_message_once_and_sent_ones_never_again(tmp_path, clock):
    path = tmp_path / "state.db"
    store1 = GatewayStore(path, clock=clock)
    before = FakeAdapter(clock=clock, text_limit=20)
    outbox1 = Outbox(store1.outbox, {"fake": before}, clock=clock)
    await outbox1.start()
    outbox1.enqueue("fake", "a", None, "delivered before", kind="reply", key="t1")
    await outbox1.wait_sent("t1:0", timeout=WAIT)
    before.gate.clear()  # the platform hangs: the next send is in flight when the process stops
    outbox1.enqueue("fake", "a", None, "first of two parts, cut", kind="reply", key="t2")
    outbox1.enqueue("fake", "b", None, "another chat", kind="reply", key="t3")
    await before.until(lambda: len(before.calls) == 3)
    await outbox1.close()
    outbox1.enqueue("fake", "a", None, "after close", kind="reply", key="t4")  # journaled only
    store1.close()

    store2 = GatewayStore(path, clock=clock)
    after = FakeAdapter(clock=clock, text_limit=20)
    outbox2 = Outbox(store2.outbox, {"fake": after}, clock=clock)
    await outbox2.start()
    # The turn is replayed after the restart: its keys are already journaled.
    assert outbox2.enqueue("fake", "a", None, "delivered before", kind="reply", key="t1") == ["t1:0"]
    assert outbox2.enqueue("fake", "a", None, "first of two parts, cut", kind="reply", key="t2") == ["t2:0", "t2:1"]
    assert await outbox2.flush(timeout=WAIT)
    assert after.texts("a") == ["first of two parts,", "cut", "after close"]
    assert after.texts("b") == ["another chat"]
    assert store2.outbox.pending_messages() == []
    await outbox2.close()
    store2.close()


async def test_restart_resumes_a_resplit_and_honours_a_recorded_retry_time(tmp_path):
    clock = FakeClock(autojump=False)
    path = tmp_path / "state.db"
    store1 = GatewayStore(path, clock=clock)
    before = FakeAdapter(clock=clock, accept_limit=20)
    outbox1 = Outbox(store1.outbox, {"fake": before}, clock=clock)
    await outbox1.start()
    before.fail_next(NetworkError("down"), chat="b")
    outbox1.enqueue("fake", "b", None, "retry me", kind="reply", key="r")
    before.fail_next(MessageTooLong("too long"), MessageTooLong("too long"), RateLimited("429", retry_after=9),
                     chat="a")
    outbox1.enqueue("fake", "a", None, "one two three four five six", kind="reply", key="k")
    await clock.until_sleeping(2)  # b backs off; a's first piece waits out a 429
    await outbox1.close()
    store1.close()
    assert before.sent == []

    store2 = GatewayStore(path, clock=clock)
    after = FakeAdapter(clock=clock, accept_limit=20)
    outbox2 = Outbox(store2.outbox, {"fake": after}, clock=clock)
    await outbox2.start()
    await clock.until_sleeping(2)  # both resume by waiting out what was left of their waits
    clock.advance(9)
    assert await outbox2.wait_sent("k:0", timeout=WAIT) is not None
    assert await outbox2.wait_sent("r:0", timeout=WAIT) is not None
    assert " ".join(after.texts("a")) == "one two three four five six"
    assert after.texts("b") == ["retry me"]
    await outbox2.close()
    store2.close()


async def test_text_with_lone_surrogates_goes_out_under_a_utf16_measure(make, clock):
    adapter = FakeAdapter(clock=clock, measure=utf16_length, text_limit=10)
    outbox = await make(adapter)
    keys = outbox.enqueue("fake", "c1", None, "ab\ud83d cd 😀😀 ef gh", kind="reply", key="k")
    assert await outbox.flush(timeout=WAIT)
    assert "".join(adapter.texts()).replace(" ", "") == "ab\ud83dcd😀😀efgh" and len(keys) > 1


async def test_logs_carry_keys_never_text(make, clock, caplog):
    adapter = FakeAdapter(clock=clock, accept_limit=12)
    outbox = await make(adapter, give_up_after={"fake": 1.0})
    adapter.fail_next(RateLimited("429", retry_after=0.1), *[NetworkError("boom") for _ in range(20)], chat="a")
    adapter.fail_next(EditUnsupported("no"), chat="b")
    with caplog.at_level(logging.DEBUG):
        outbox.enqueue("fake", "a", None, "secret words", kind="reply", key="ka")
        outbox.enqueue("fake", "b", None, "secret words here and there", kind="reply", key="kb")
        outbox.enqueue_edit("fake", "b", None, "kb:0", "secret edit", key="eb")
        assert await outbox.flush(timeout=WAIT)
    assert any("ka:0" in r.getMessage() for r in caplog.records)
    assert not any("secret" in r.getMessage() for r in caplog.records)
