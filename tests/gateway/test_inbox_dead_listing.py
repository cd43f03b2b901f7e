"""What `switchboard inbox dead` prints of a dead letter: never a secret its error or its text holds."""

from __future__ import annotations

from gateway.cli import main
from gateway.host import STATE_DB
from gateway.store import GatewayStore
from platforms.base import Inbound

MODEL_KEY = "model-key-held-in-the-config-f00d"
BOT_TOKEN = "7012345678:AAHinb0x-n0t-a-real-t0ken-at-all-x9"


def test_inbox_dead_masks_the_secrets_an_error_holds_as_the_log_does(tmp_path, capsys) -> None:
    # The error is the exception's text as stored: the gateway's log masked it, the listing did not.
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    store = GatewayStore(state / STATE_DB)
    try:
        inbound = Inbound(platform="chat", chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                          text=f"please answer: {MODEL_KEY}", event_id="ev-1")
        store.inbox.accept(inbound, "turn-1")
        store.inbox.failed("chat", "ev-1", f"APIError: key {MODEL_KEY} refused\nby http://127.0.0.1:8081/bot"
                                           f"{BOT_TOKEN}/getMe")
        store.inbox.set_aside("chat", "ev-1")
    finally:
        store.close()
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\nmodel:\n  api_key: {MODEL_KEY}\n")
    assert main(["--config", str(config_file), "inbox", "dead"]) == 0
    out = capsys.readouterr().out
    assert MODEL_KEY not in out and BOT_TOKEN.partition(":")[2] not in out, out
    # One line per letter, then its text: an error's own line breaks would pass for letters of their own.
    assert "  APIError: key *** refused by http://127.0.0.1:8081/bot***/getMe\n    'please answer: ***'\n" in out


def test_a_letter_whose_time_the_database_cannot_read_is_listed_with_the_others(tmp_path, capsys) -> None:
    # A text in its REAL column (a hand edit, a damaged page) stopped the whole listing with a traceback: the
    # listing only reads, so the next start's mend of such times has not reached it.
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    store = GatewayStore(state / STATE_DB)
    try:
        for n in (1, 2):
            inbound = Inbound(platform="chat", chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                              text=f"message {n}", event_id=f"ev-{n}")
            store.inbox.accept(inbound, f"turn-{n}")
            store.inbox.failed("chat", f"ev-{n}", "refused")
            store.inbox.set_aside("chat", f"ev-{n}")
        store.db.write("UPDATE gateway_dead_letters SET dead_at='yesterday' WHERE event_id='ev-1'")
    finally:
        store.close()
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n")
    assert main(["--config", str(config_file), "inbox", "dead"]) == 0
    out = capsys.readouterr().out
    assert "(time unreadable)" in out and "'message 1'" in out and "'message 2'" in out, out
