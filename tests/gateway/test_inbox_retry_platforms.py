"""What `switchboard inbox retry` says of who takes a letter up, and what `inbox dead` shows of a letter's
ids: told "the running gateway takes it up within seconds" of a platform the configuration does not enable,
an operator waited for nothing (a gateway takes up only its platforms' events, `gateway.unconfigured`); and a
chat id a webhook caller chose, printed as it was, could drive the operator's terminal."""

from __future__ import annotations

import pytest

from gateway import state_lock
from gateway.cli import main
from gateway.host import STATE_DB
from gateway.store import GatewayStore
from platforms.base import Inbound


def a_dead_letter(state, platform: str, *, chat_id: str = "c1", event_id: str = "ev-1", error: str = "") -> None:
    state.mkdir(mode=0o700, exist_ok=True)
    store = GatewayStore(state / STATE_DB)
    try:
        inbound = Inbound(platform=platform, chat_id=chat_id, thread_id=None, user_id="u1", user_name=None,
                          text="please answer", event_id=event_id)
        store.inbox.accept(inbound, "turn-1")
        if error:
            store.inbox.failed(platform, event_id, error)
        store.inbox.set_aside(platform, event_id)
    finally:
        store.close()


def retry_said(tmp_path, capsys, platform: str, config: str = "", *, running: bool) -> str:
    state = tmp_path / "state"
    a_dead_letter(state, platform)
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n{config}")
    lock = state_lock.hold(state) if running else None  # as `switchboard run` (or `chat`) holds it
    try:
        assert main(["--config", str(config_file), "inbox", "retry", "1"]) == 0
    finally:
        if lock is not None:
            lock.release()
    return capsys.readouterr().out.strip()


@pytest.mark.parametrize("running", [True, False], ids=["running", "stopped"])
def test_retry_of_a_platform_the_configuration_does_not_enable_says_it_waits_for_one_that_does(
        tmp_path, capsys, running):
    said = retry_said(tmp_path, capsys, "telegram", running=running)
    assert said == ("re-queued telegram event ev-1: telegram is not enabled in this configuration"
                    " (platforms.telegram.enabled): it waits for a gateway started with it enabled"), said


@pytest.mark.parametrize("running, when", [
    (True, "the running gateway takes it up within seconds"),
    (False, "the gateway handles it when it next starts"),
], ids=["running", "stopped"])
def test_retry_of_an_enabled_platform_says_when_the_gateway_takes_it_up(tmp_path, capsys, running, when):
    said = retry_said(tmp_path, capsys, "webhook", "platforms:\n  webhook:\n    enabled: true\n", running=running)
    assert said == f"re-queued webhook event ev-1: {when}", said


@pytest.mark.parametrize("running, when", [
    (True, "only `switchboard chat` takes it up: within seconds if that is what runs on this state directory,"
           " else when it next starts"),
    (False, "only `switchboard chat` takes it up, when it next starts"),
], ids=["running", "stopped"])
def test_retry_of_a_terminal_letter_says_only_the_terminal_chat_takes_it_up(tmp_path, capsys, running, when):
    # `switchboard run` never runs the terminal: its events wait for `switchboard chat`, whatever is enabled.
    said = retry_said(tmp_path, capsys, "local", "platforms:\n  webhook:\n    enabled: true\n", running=running)
    assert said == f"re-queued local event ev-1: {when}", said


def test_inbox_dead_and_retry_show_the_control_characters_of_ids_never_obeyed(tmp_path, capsys):
    # A webhook caller chooses its chat and event ids: an OSC that retitles the window (or writes the
    # clipboard), a screen clear, and a line break that forges a letter's line of its own.
    chat_id = "hook:\x1b]0;pwned\x07\n2  2026-01-01 00:00:00  webhook chat forged"
    event_id = "ev\x1b[2J\x9b1m"
    state = tmp_path / "state"
    a_dead_letter(state, "webhook", chat_id=chat_id, event_id=event_id, error="ValueError: bad \x1b[31mred")
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n")
    assert main(["--config", str(config_file), "inbox", "dead"]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\x9b"), repr(out)
    first, text, footer = out.splitlines()
    shown_ids = "webhook chat hook:␛]0;pwned␇␊2  2026-01-01 00:00:00  webhook chat forged  event ev␛[2J\ufffd1m"
    assert shown_ids in first, first
    assert first.endswith("  ValueError: bad ␛[31mred") and text == "    'please answer'", out
    assert main(["--config", str(config_file), "inbox", "retry", "1"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("re-queued webhook event ev␛[2J\ufffd1m: ") and "\x1b" not in said, repr(said)
