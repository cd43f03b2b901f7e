"""A dead letter whose number columns (attempts, its times) hold what the code does not expect, as a hand edit or a
damaged write leaves them: text of no UTF-8 makes the letter one that does not read back, listed by its id beside the
others; a count that is no number is listed as unreadable, never printed. Read as before, text of no UTF-8 failed
`switchboard inbox dead`, its dismissal and the console's lists for every letter, SQLite's error quoting the text."""

from __future__ import annotations

import pytest

from gateway.cli import main
from gateway.store import DeadLetter
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.observing import served
from tests.gateway.test_console import post, state
from tests.gateway.test_damaged_dead_letters import NO_UTF8, SECRET, damaged, letters


def inbox(capsys, config: str, *args: str) -> tuple[int, str, str]:
    status = main(["--config", config, "inbox", *args])
    out, err = capsys.readouterr()
    assert SECRET not in out + err and "Traceback" not in err
    return status, out, err


@pytest.mark.parametrize("column", ["attempts", "received_at", "dead_at"])
def test_a_number_of_no_utf8_is_a_letter_listed_by_its_id_and_the_others_retry(tmp_path, capsys, column) -> None:
    config = damaged(tmp_path, column, NO_UTF8)
    status, out, _ = inbox(capsys, config, "dead")
    assert status == 0
    first = out.splitlines()[0]
    assert first.startswith("1  ") and "could not be read back" in first, out
    assert "chat c2  event ev-2  1 attempts" in out and "'message 2'" in out, out
    if column == "attempts":  # a time is mended as the store opens for a write (`damaged_times`): then it reads
        status, _, err = inbox(capsys, config, "retry", "1")
        assert status == 1 and err.startswith("switchboard: dead letter 1 could not be read back"), err
    status, out, _ = inbox(capsys, config, "retry", "2")
    assert status == 0 and out.startswith("re-queued chat event ev-2"), out
    status, out, _ = inbox(capsys, config, "dismiss", "1")
    assert status == 0 and out.endswith(": it will not be handled\n"), out
    assert inbox(capsys, config, "dead")[1] == "no dead letters\n"


@pytest.mark.parametrize("value", ["\x1b[2Jthree", b"\x1b]0;owned\x07"], ids=["text", "blob"])
def test_a_count_that_is_no_number_is_listed_as_unreadable_and_the_letter_retries(tmp_path, capsys, value) -> None:
    # Printed as it was, a hand edit's escape sequence reached the terminal, which obeyed it.
    config = damaged(tmp_path, "attempts", value)
    status, out, _ = inbox(capsys, config, "dead")
    assert status == 0 and "\x1b" not in out, out
    assert "1  " in out and "chat c1  event ev-1  (attempts unreadable)  refused" in out and "'message 1'" in out, out
    assert inbox(capsys, config, "retry", "1")[0] == 0


async def test_the_console_lists_a_letter_whose_count_is_no_utf8_beside_the_others(tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat])
    letters(gateway.store)
    gateway.store.db.write("UPDATE gateway_dead_letters SET attempts=CAST(? AS TEXT) WHERE id=1", (NO_UTF8,))
    async with served(gateway) as server:
        seen = await state(server.url)
        assert SECRET not in str(seen)
        shown = {d["id"]: d for d in seen["outbox"]["dead_letters"]}
        assert shown[1]["damaged"] and shown[1]["attempts"] is None and shown[2]["text"] == "message 2", shown
        assert await post(server.url, "/console/api/dead-letters/1/dismiss") == (200, {"ok": True})
        assert [d["id"] for d in (await state(server.url))["outbox"]["dead_letters"]] == [2]


def test_a_letter_built_by_hand_reads_its_chat_and_text_from_its_payload():
    # `DeadLetter` is public (`gateway.store`): one built without the fields the store fills in is not "damaged".
    letter = DeadLetter(1, "telegram", "e1", '{"chat_id": 42, "text": "hi"}', None, 3, None, 1.0, 2.0)
    assert (letter.chat_id, letter.text) == ("42", "hi")
    damaged = DeadLetter(2, "", "", "", None, 3, None, 1.0, 2.0, "UnicodeDecodeError")
    assert damaged.chat_id == "" and damaged.text.startswith("(could not be read back")
