"""A message held in the store (`session_registry.QUEUED`) whose row cannot be read back (a hand edit, a damaged
write: no JSON, no UTF-8, or JSON of another shape) is set aside, logged once by its chat and row, never its text;
the chat's other held messages go on, in order. Its event stays unsettled in the inbox: the next start hands it
over anew."""

from __future__ import annotations

import logging
import re

import pytest

from agent.testing import FakeClock
from gateway import session_registry
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_session_queue_bound import drain, echoing, flood, registry_on

SECRET = "sk-live-in-the-damaged-row"
DAMAGED = [f"{{'not json': '{SECRET}'", f'{{"n": 1, "text": "{SECRET}"}}']
"""A row cut short, one of another shape; and, bound as SQL text, one that is no UTF-8 (`_damage`)."""


@pytest.fixture
def store(tmp_path):
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    yield store
    store.close()


def _damage(store, seqs):
    not_json, other_shape = DAMAGED
    store.db.write("UPDATE gateway_held SET item=? WHERE seq=?", (not_json, seqs[0]))
    store.db.write("UPDATE gateway_held SET item=? WHERE seq=?", (other_shape, seqs[1]))
    store.db.write("UPDATE gateway_held SET item=CAST(? AS TEXT) WHERE seq=?", (SECRET.encode() + b"\xff", seqs[2]))


def _set_aside_lines(caplog):
    return [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]


def test_damaged_held_rows_are_set_aside_and_the_others_run_in_order(store, monkeypatch, caplog):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    registry = registry_on(store)
    session = flood(registry, sent=9)  # t-0, t-1 queued; t-2 … t-8 held
    seqs = [seq for seq, _ in store.sessions.held(registry.run, session.key)]
    _damage(store, seqs[1:4])  # t-3, t-4, t-5
    with caplog.at_level(logging.INFO):
        taken = drain(registry, session)
    assert [item.turn_id for item in taken] == ["t-0", "t-1", "t-2", "t-6", "t-7", "t-8"]
    assert session.held == 0 and not session.busy
    assert store.db.read("SELECT COUNT(*) FROM gateway_held") == [(0,)]
    lines = _set_aside_lines(caplog)
    assert len(lines) == 3 and all(session.key in line for line in lines), lines
    assert [seq for seq in seqs[1:4] if any(f"row {seq}" in line for line in lines)] == seqs[1:4], lines
    assert SECRET not in caplog.text


def test_a_stop_sets_damaged_held_rows_aside_and_drops_the_rest(store, monkeypatch, caplog):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    ended = []
    registry = registry_on(store, ended=lambda session, why, stopped, waiting: ended.extend(waiting))
    session = flood(registry, sent=7)
    _damage(store, [seq for seq, _ in store.sessions.held(registry.run, session.key)][:3])
    with caplog.at_level(logging.INFO):
        stopped = registry.stop(session, "stop")
    assert stopped.dropped == 4  # two queued, two held that could be read: their events settled
    assert [turn_id for turn_id, _ in ended] == ["t-0", "t-1", "t-5", "t-6"]
    assert session.held == 0 and store.db.read("SELECT COUNT(*) FROM gateway_held") == [(0,)]
    assert len(_set_aside_lines(caplog)) == 3 and SECRET not in caplog.text


async def test_a_chat_goes_on_past_a_damaged_held_message(tmp_path, gateways, monkeypatch, caplog):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    chat, model = RecordingAdapter(), echoing(gate_first=True)
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat], model=model)
    await chat.say("m0")
    await model.reached("first")
    for n in range(1, 6):
        await chat.say(f"m{n}")
    session = gateway.sessions.find(chat.name, "c1", None)
    assert (len(session.queue), session.held) == (2, 3)  # m3, m4, m5 held
    [_, seq, _] = [seq for seq, _ in gateway.store.sessions.held(gateway.sessions.run, session.key)]
    gateway.store.db.write("UPDATE gateway_held SET item=? WHERE seq=?", (DAMAGED[0], seq))  # m4's
    model.release("first")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 5)
    await chat.say("m6")  # not held behind the damaged row for good
    await chat.wait_for(lambda: len(chat.texts("reply")) == 6)
    await settled(gateway)
    assert chat.texts("reply") == ["re: m0", "re: m1", "re: m2", "re: m3", "re: m5", "re: m6"]
    assert session.held == 0 and gateway.quiet
    assert len(_set_aside_lines(caplog)) == 1 and SECRET not in caplog.text


@pytest.mark.parametrize("damage", ["huge-number", "deep"])
def test_a_held_row_read_as_json_that_no_message_holds_is_set_aside(store, monkeypatch, damage):
    # A count no int holds, or nesting deeper than the parser goes: raised past the checks, it held the chat for good.
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    registry = registry_on(store)
    session = flood(registry, sent=4)  # t-0, t-1 queued; t-2, t-3 held
    [(seq, item), _] = store.sessions.held(registry.run, session.key)
    damaged = re.sub(rb'"n": *[0-9]+', b'"n": 1e999', item) if damage == "huge-number" else b"[" * 100_000
    assert damaged != item
    store.db.write("UPDATE gateway_held SET item=CAST(? AS TEXT) WHERE seq=?", (damaged, seq))
    assert [item.turn_id for item in drain(registry, session)] == ["t-0", "t-1", "t-3"]
