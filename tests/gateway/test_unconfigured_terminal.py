"""`gateway.unconfigured`: what the terminal's chat left is kept for `switchboard chat`, and the start of a
gateway without the terminal says so in words an operator can act on."""

from __future__ import annotations

import logging

from gateway.store import GatewayStore
from gateway.unconfigured import keep_unconfigured
from platforms.base import Inbound


def _event(platform: str, event_id: str) -> Inbound:
    return Inbound(platform=platform, chat_id="c1", thread_id=None, user_id="u1", user_name=None, text="hello",
                   event_id=event_id)


def test_the_terminals_work_left_for_switchboard_run_names_switchboard_chat_not_a_setting(tmp_path, caplog):
    # `make run`, then `switchboard run` on the same state directory: the terminal's message still to answer
    # was logged as "local is not configured … until it is configured again", at every start, though no
    # setting configures the terminal: the operator looked for a `platforms.local` that does not exist.
    store = GatewayStore(tmp_path / "state.db")
    try:
        store.inbox.accept(_event("local", "local-1"), "t-1")
        store.inbox.accept(_event("telegram", "tg-1"), "t-2")
        with caplog.at_level(logging.WARNING, logger="gateway.app"):
            keep_unconfigured(store, {"slack"}, [], [])
    finally:
        store.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "gateway.app"]
    assert lines == [
        "the terminal chat is not running here: 1 message(s) to answer, 0 background result(s) to deliver and 0"
        " message(s) to send are kept, untouched, until `switchboard chat` next starts on this state directory",
        "telegram is not configured: 1 message(s) to answer, 0 background result(s) to deliver and 0 message(s) to"
        " send are kept, untouched, until it is configured again",
    ]


def test_switchboard_chat_keeps_quiet_about_its_own_terminal(tmp_path, caplog):
    store = GatewayStore(tmp_path / "state.db")
    try:
        store.inbox.accept(_event("local", "local-1"), "t-1")
        with caplog.at_level(logging.WARNING, logger="gateway.app"):
            keep_unconfigured(store, {"local"}, [], [])
    finally:
        store.close()
    assert [r for r in caplog.records if r.name == "gateway.app"] == []
