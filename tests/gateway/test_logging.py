"""Log lines: text and JSON shapes, ids from the context, and redaction of secrets."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest

from gateway.logging import log_context, logging_installed, redact, register_secret, setup_logging


@pytest.fixture
def capture():
    """Installs our handler on a StringIO and removes it afterwards."""
    root = logging.getLogger()
    level = root.level
    installed: list[logging.Handler] = []

    def capture(fmt: str = "text", level_name: str = "INFO", secrets=()) -> io.StringIO:
        stream = io.StringIO()
        installed.append(setup_logging(level_name, fmt, stream, secrets=secrets))
        return stream

    yield capture
    for handler in installed:
        root.removeHandler(handler)
    root.setLevel(level)


log = logging.getLogger("gateway.test")


def test_text_line_with_ids(capture):
    stream = capture("text")
    with log_context(session_id="s1", turn_id="t7"):
        log.info("hello %s", "world")
        with log_context(subagent_id="c2"):
            log.warning("child says hi")
    log.info("outside")
    lines = stream.getvalue().splitlines()
    # 2026-11-30 12:00:00 INFO gateway.test: hello world session=s1 turn=t7
    assert lines[0][19:] == " INFO gateway.test: hello world session=s1 turn=t7"
    assert lines[1].endswith("WARNING gateway.test: child says hi session=s1 turn=t7 subagent=c2")
    assert lines[2].endswith("INFO gateway.test: outside")


def test_json_line_with_ids_and_exception(capture):
    stream = capture("json")
    with log_context(session_id="s1", turn_id=3):
        try:
            raise ValueError("bad")
        except ValueError:
            log.exception("failed")
    entry = json.loads(stream.getvalue())
    assert {k: entry[k] for k in ("level", "logger", "msg", "session_id", "turn_id")} == {
        "level": "ERROR", "logger": "gateway.test", "msg": "failed", "session_id": "s1", "turn_id": "3"
    }
    assert entry["ts"].endswith("Z") and "ValueError: bad" in entry["exc"]


async def test_ids_reach_tasks_started_inside_the_context(capture):
    stream = capture("json")

    async def child() -> None:
        await asyncio.sleep(0)
        log.info("child step")

    with log_context(session_id="s9", turn_id="t1"):
        with log_context(subagent_id="sub-1"):
            task = asyncio.create_task(child())
        log.info("parent waits")
        await task
    entries = [json.loads(line) for line in stream.getvalue().splitlines()]
    by_msg = {e["msg"]: e for e in entries}
    assert by_msg["child step"]["subagent_id"] == "sub-1"
    assert by_msg["child step"]["session_id"] == "s9"
    assert "subagent_id" not in by_msg["parent waits"]


def test_level_filters(capture):
    stream = capture("text", "WARNING")
    log.info("quiet")
    log.warning("loud")
    assert "quiet" not in stream.getvalue() and "loud" in stream.getvalue()


def test_setup_twice_does_not_duplicate_lines(capture):
    capture("text")
    stream = capture("text")
    log.info("once")
    assert stream.getvalue().count("once") == 1
    assert sum(getattr(h, "_switchboard", False) for h in logging.getLogger().handlers) == 1


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_registered_token_never_appears_in_output(capture, fmt):
    token = "tok-3f9a1c77e2b84d"
    stream = capture(fmt, secrets=[token])
    log.info("calling with %s", token)
    log.info(f"already formatted {token}")
    try:
        raise RuntimeError(f"request with {token} failed")
    except RuntimeError:
        log.exception("boom")
    output = stream.getvalue()
    assert token not in output
    assert output.count("***") >= 3


def test_token_shapes_are_masked_without_registration():
    text = (
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345 "
        "key sk-proj-abcdefghijklmnopqrstuv "
        "url /bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage "
        "slack xoxb-1234567890-0987654321-AbCdEfGhIj xapp-1-A0123-4567-abcdef"
    )
    masked = redact(text)
    for secret in ("abcdefghijklmnopqrstuvwxyz012345", "sk-proj", "AAHdqTcv", "xoxb-", "xapp-"):
        assert secret not in masked
    assert "Bearer ***" in masked and "/bot***/sendMessage" in masked


def test_ordinary_text_is_left_alone():
    text = "task-abcdefghijklmnopqrstuv finished; the bot received 12:30 messages; Bearer of news"
    assert redact(text) == text


def test_an_id_ending_in_digits_before_a_colon_is_no_telegram_token():
    key = "tc-deleg_f9002cc8345267:card-final-deleg_f9002cc8345267:0"
    assert redact(f"outbox: {key} dropped") == f"outbox: {key} dropped"
    assert redact("token=123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw") == "token=***"
    assert redact("bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw") == "bot***"


def test_short_secrets_are_not_registered():
    register_secret("abc")
    assert redact("abc abcd") == "abc abcd"


async def test_lines_logged_inside_an_agent_turn_carry_its_ids(capture):
    from agent import AgentSession, ToolRegistry
    from agent.models.scripted import ScriptedModel

    stream = capture("json")
    reg = ToolRegistry()
    reg.add("noisy", "logs", {"type": "object"},
            lambda a, c: logging.getLogger("plugin.noisy").info("tool ran") or "ok", toolset="t")
    parent = AgentSession(model=ScriptedModel({"*": [[{"tool_calls": [{"name": "noisy"}]}, {"text": "ok"}]]}),
                          tools=reg.resolve(), session_id="parent-1")
    child = AgentSession(model=parent.model, tools=reg.resolve(), session_id="sa-1", role="leaf",
                         metadata={"parent_session_id": "parent-1"})
    first = await parent.run_turn("go")
    await child.run_turn("go")
    lines = [json.loads(line) for line in stream.getvalue().splitlines() if "tool ran" in line]
    assert lines[0]["session_id"] == "parent-1" and lines[0]["turn_id"] == first.turn_id
    assert lines[1]["session_id"] == "parent-1" and lines[1]["subagent_id"] == "sa-1"


def test_a_flood_of_one_line_is_one_line_per_window():
    from gateway.log_repeats import RepeatFilter

    now = [0.0]
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RepeatFilter(30.0, clock=lambda: now[0]))
    flood = logging.getLogger("gateway.test.flood")
    flood.addHandler(handler)
    flood.propagate = False
    try:
        for _ in range(1000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                flood.exception("accept failed")
            flood.warning("client 10.0.0.%d hung up", 7)  # identical too
        flood.warning("client 10.0.0.%d hung up", 8)  # another client: another line
        now[0] = 31.0
        flood.error("accept failed")  # no exception: another kind of line
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            flood.exception("accept failed")
    finally:
        flood.removeHandler(handler)
        flood.propagate = True
    lines = [line for line in stream.getvalue().splitlines() if not line.startswith((" ", "Traceback", "OSError"))]
    assert lines == ["accept failed", "client 10.0.0.7 hung up", "client 10.0.0.8 hung up", "accept failed",
                     "accept failed (and 999 more like it in the last 31 s)"]
    assert stream.getvalue().count("Traceback") == 2


def test_setup_logging_drops_repeats_and_zero_keeps_them(capture):
    stream = capture("text")
    for _ in range(5):
        log.error("disk full")
    assert stream.getvalue().count("disk full") == 1
    root = logging.getLogger()
    every = io.StringIO()
    installed = setup_logging("INFO", "text", every, repeat_window=0)
    try:
        for _ in range(5):
            log.error("disk full")
    finally:
        root.removeHandler(installed)
    assert every.getvalue().count("disk full") == 5


def test_a_line_logged_after_our_handler_is_gone_is_redacted_too(capsys):
    """Python's last-resort handler writes what no handler takes (a finaliser at exit, after the
    command's `logging_installed` block): with secrets in it, as typed, before this."""
    token = "tok-late-7c1e93a0d54b"
    with logging_installed("INFO", "text", io.StringIO(), secrets=[token]):
        pass
    orphan = logging.getLogger("gateway.test.orphan")
    orphan.propagate = False  # pytest's own handlers sit on the root: this reaches none, as at exit
    try:
        orphan.warning("late line with %s", token)
    finally:
        orphan.propagate = True
    err = capsys.readouterr().err
    assert "late line with ***" in err and token not in err


class FullDisk(io.StringIO):
    """A log file on a disk that filled up: every write is refused."""

    def write(self, text):
        raise OSError(28, "No space left on device")


def test_a_log_that_cannot_be_written_says_so_once_and_drops_its_lines(capfd):
    with logging_installed("INFO", "text", FullDisk()):
        for n in range(3):
            log.warning("line %d", n)
    err = capfd.readouterr().err
    assert err == "switchboard: cannot write the log (No space left on device); its lines are dropped\n"


def test_folding_a_repeat_leaves_the_record_alone_for_other_handlers(capture):
    """The log's count of repeats is its own: a handler attached after it (the console's recent
    errors) sees the message as logged, never "… (and 2 more like it …)" to fold a second time."""
    from gateway.console.recent_errors import RecentErrors
    from gateway.log_repeats import RepeatFilter

    stream = capture("text")
    now = [0.0]
    handler = next(h for h in logging.getLogger().handlers if getattr(h, "_switchboard", False))
    next(f for f in handler.filters if isinstance(f, RepeatFilter))._clock = lambda: now[0]
    seen: list[str] = []

    class Later(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    later = Later()
    logging.getLogger().addHandler(later)
    recent = RecentErrors(repeat_window=30)
    recent._repeats._clock = lambda: now[0]
    recent.attach()
    try:
        for at in (0, 10, 20, 35, 36):
            now[0] = at
            log.warning("disk full")
    finally:
        logging.getLogger().removeHandler(later)
        recent.detach()
    assert stream.getvalue().count("disk full") == 2
    assert "(and 2 more like it in the last 35 s)" in stream.getvalue()
    assert seen == ["disk full"] * 5
    assert [e["message"] for e in recent.entries()] == [  # the line at 36 s told as the console is detached
        "disk full", "disk full (and 2 more like it in the last 35 s)", "disk full"]
