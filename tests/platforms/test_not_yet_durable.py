"""`NotYetDurable`: the sink recorded an event and SQLite refused its commit, which the store makes later.

Still a storage refusal for every adapter that hands an event over again (or answers 500), and, for a
slash command's stop, a command that may yet be answered (`Handing.under_way`), not "Not taken"."""

from __future__ import annotations

import sqlite3

import pytest

from platforms.base import Inbound
from platforms.not_recorded import Handing, NotYetDurable, storage_refusal
from tests.sqlite_errors import full_disk

COMMAND = Inbound(platform="slack", chat_id="D1", thread_id=None, user_id="U1", user_name=None, text="/new",
                  event_id="command:1", is_command=True)


def test_a_refused_commit_is_a_storage_refusal_with_sqlites_own_text_and_code() -> None:
    refused = full_disk()
    exc = NotYetDurable.of(refused)
    assert isinstance(exc, sqlite3.OperationalError) and storage_refusal(exc)
    assert (str(exc), exc.sqlite_errorcode, exc.sqlite_errorname) == (
        str(refused), refused.sqlite_errorcode, refused.sqlite_errorname)


def test_one_of_an_error_python_raised_without_a_code_is_a_storage_refusal_still() -> None:
    # The store keeps the event whatever the commit's error: final ("could not handle"), its sender heard no,
    # then its answer. The code is absent, and reading it does not break the check.
    assert storage_refusal(NotYetDurable.of(sqlite3.OperationalError("database is locked")))
    assert not storage_refusal(sqlite3.OperationalError("database is locked"))


async def test_a_command_recorded_without_its_commit_may_be_recorded_whatever_later_tries_raise() -> None:
    outcomes: list[BaseException | None] = [NotYetDurable.of(full_disk()), full_disk()]

    async def sink(inbound: Inbound) -> None:
        if (outcome := outcomes.pop(0)) is not None:
            raise outcome

    handing = Handing(sink)
    with pytest.raises(NotYetDurable):
        await handing(COMMAND)
    assert handing.under_way
    # Written again, the batch is refused again: its row is still the store's to commit.
    with pytest.raises(sqlite3.OperationalError):
        await handing(COMMAND)
    assert handing.under_way
    outcomes.append(None)
    await handing(COMMAND)  # durable at last, and handled as any command
    assert not handing.under_way


async def test_a_command_the_store_refused_to_record_is_not_under_way() -> None:
    async def sink(inbound: Inbound) -> None:
        raise full_disk()

    handing = Handing(sink)
    with pytest.raises(sqlite3.OperationalError):
        await handing(COMMAND)
    assert not handing.under_way
