"""A log record's message and traceback are cut to `MAX_TEXT_CHARS` after redaction: a plugin
command's exception quoting a megabyte argument wrote a megabyte line at each failure."""

from __future__ import annotations

import io
import re

from gateway.config import config_from_mapping
from gateway.logging import logging_installed
from gateway.testing import RecordingAdapter
from tests.plugin_modules import plugin_module

SECRET = "w4-log-bound-secret-9d2e7b41"
MAX_TEXT_CHARS = 16_000
"""`gateway.logging`'s bound, spelled out."""


async def test_a_plugin_commands_huge_exception_is_logged_cut_and_redacted_before_the_cut(tmp_path, gateways,
                                                                                          monkeypatch):
    plugin_module(tmp_path, monkeypatch, "parsing_plugin",
                  "def parse(args, context):\n    raise ValueError(f'cannot parse {args!r}')\n"
                  "def register(ctx):\n    ctx.register_command('parse', parse)\n")
    # Secrets on both sides of the cuts: masked after the cut, the one cut in two would show in part.
    huge = f"{SECRET} " * 2_000 + "b" * 500_000 + f" {SECRET}" * 2_000
    config = config_from_mapping({"state_dir": str(tmp_path / "state"), "plugins": ["parsing_plugin"]}).config
    chat = RecordingAdapter()
    stream = io.StringIO()
    with logging_installed("INFO", "text", stream, secrets=[SECRET]):
        await gateways(config, [chat], script={"parent": [[{"text": "x"}]]})
        await chat.say(f"/parse {huge}")
        await chat.wait_for(lambda: chat.texts() == ["/parse failed: ValueError."])
    written = stream.getvalue()
    start = written.index("command /parse from plugin parsing_plugin failed")
    failure = written[start:written.index("\n20", start) if "\n20" in written[start:] else len(written)]
    assert len(failure) < 2 * MAX_TEXT_CHARS + 1_000
    before, after = re.split(r" …\[\d+ characters cut\]… ", failure)
    # Only masks and spaces beside the cut, which may fall inside a mask (its "*" and "**" either side):
    # where it lands moves with the line's length (the paths in the traceback).
    assert before[-200:].replace("*", "").strip() == after[:200].replace("*", "").strip() == ""
    assert failure.rstrip().endswith(" ***'")  # the end kept: the traceback's last line names the exception
    assert SECRET[:8] not in written and SECRET[-8:] not in written
