"""A dead letter that no longer reads back (a hand edit, a damaged write: text of no UTF-8, a payload that is no
JSON or no event) is listed by its id, never what it holds, beside the others, which list and retry as ever; it
can be dismissed, and a retry says why it cannot be handed back. Read as before, it failed `switchboard inbox
dead` and the console's lists for every letter (SQLite's error quoting its text), and its retry was a traceback."""

from __future__ import annotations

import sqlite3

import pytest

from gateway.cli import main
from gateway.host import STATE_DB
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config
from platforms.base import Inbound
from tests.gateway.observing import served
from tests.gateway.test_console import post, state

SECRET = "sk-live-in-the-damaged-letter"
NO_UTF8 = SECRET.encode() + b" \xff"
DAMAGES = [("payload", NO_UTF8), ("payload", f"{{'cut short': '{SECRET}'"), ("payload", f'["{SECRET}"]'),
           ("platform", NO_UTF8), ("error", NO_UTF8)]


def letters(store: GatewayStore) -> None:
    """Dead letters 1 and 2, of events ev-1 and ev-2."""
    for n in (1, 2):
        store.inbox.accept(Inbound(platform="chat", chat_id=f"c{n}", thread_id=None, user_id="u1", user_name=None,
                                   text=f"message {n}", event_id=f"ev-{n}"), f"turn-{n}")
        store.inbox.failed("chat", f"ev-{n}", "refused")
        store.inbox.set_aside("chat", f"ev-{n}")


def damaged(tmp_path, column: str, value: str | bytes) -> str:
    """The configuration of a state directory with `letters`, letter 1's ``column`` set to ``value`` as a hand edit
    would (sqlite3 itself)."""
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    store = GatewayStore(state_dir / STATE_DB)
    letters(store)
    store.close()
    conn = sqlite3.connect(state_dir / STATE_DB)
    cast = "CAST(? AS TEXT)" if isinstance(value, bytes) else "?"
    conn.execute(f"UPDATE gateway_dead_letters SET {column}={cast} WHERE id=1", (value,))
    conn.commit()
    conn.close()
    config = tmp_path / "switchboard.yaml"
    config.write_text(f"state_dir: {state_dir}\n")
    return str(config)


@pytest.mark.parametrize("column, value", DAMAGES)
def test_a_damaged_letter_is_listed_by_its_id_and_the_others_retry(tmp_path, capsys, column, value) -> None:
    config = damaged(tmp_path, column, value)

    def inbox(*args: str) -> tuple[int, str, str]:
        status = main(["--config", config, "inbox", *args])
        out, err = capsys.readouterr()
        assert SECRET not in out + err and "Traceback" not in err
        return status, out, err

    status, out, _ = inbox("dead")
    assert status == 0
    assert "could not be read back" in out.splitlines()[0] and out.splitlines()[0].startswith("1  "), out
    assert "chat c2  event ev-2" in out and "'message 2'" in out, out
    # A retry says why, and keeps the letter as it is, for a dismissal (or a mend).
    status, _, err = inbox("retry", "1")
    assert status == 1 and err.startswith("switchboard: dead letter 1 could not be read back"), err
    assert "`switchboard inbox dismiss 1`" in err
    status, out, _ = inbox("retry", "2")
    assert status == 0 and out.startswith("re-queued chat event ev-2"), out
    assert inbox("dismiss", "1")[:2] == (0, "dismissed dead letter 1: it will not be handled\n")
    assert inbox("dead")[1] == "no dead letters\n"


def test_a_letter_whose_payload_holds_no_event_is_listed_but_not_handed_back(tmp_path, capsys) -> None:
    # Handed back, the inbox's parse of it raised a traceback; the transaction kept the letter.
    config = damaged(tmp_path, "payload", '{"chat_id": "c1", "text": "only a text"}')
    assert main(["--config", config, "inbox", "dead"]) == 0
    assert "'only a text'" in capsys.readouterr().out
    assert main(["--config", config, "inbox", "retry", "1"]) == 1
    assert capsys.readouterr().err.startswith("switchboard: dead letter 1 could not be read back (a hand edit, a"
                                               " damaged write: TypeError) and has no event to hand back")
    assert main(["--config", config, "inbox", "dead"]) == 0
    assert "'only a text'" in capsys.readouterr().out


async def test_the_console_lists_a_damaged_letter_beside_the_others(tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat])
    letters(gateway.store)
    gateway.store.db.write("UPDATE gateway_dead_letters SET payload=CAST(? AS TEXT) WHERE id=1", (NO_UTF8,))
    async with served(gateway) as server:
        seen = await state(server.url)
        assert SECRET not in str(seen)
        assert seen["unread"] == {}, seen["unread"]  # the outbox's lists (pending, failed messages) went with it
        shown = {d["id"]: d for d in seen["outbox"]["dead_letters"]}
        assert "could not be read back" in shown[1]["text"] and shown[2]["text"] == "message 2", shown
        status, body = await post(server.url, "/console/api/dead-letters/1/retry")  # no event to hand back: kept
        assert status == 409 and "could not be read back" in body["error"] and SECRET not in body["error"], body
        assert await post(server.url, "/console/api/dead-letters/1/dismiss") == (200, {"ok": True})
        assert [d["id"] for d in (await state(server.url))["outbox"]["dead_letters"]] == [2]
