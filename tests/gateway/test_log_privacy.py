"""What users said stays out of the operator's log at INFO and above: the names of the files they sent,
and the goals the model wrote for subagents, are personal data; the log says why something failed, by
kind, size and id. (Logs are often shipped to a service many people read.)"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import os
from pathlib import Path

from agent.testing import FakeClock
from gateway import state_lock
from gateway.attachments import chat_folder, prepare, safe_name
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Attachment, Forbidden, NetworkError
from tests.gateway.test_routing import FAST_KEY, PARENT_KEY, routed_config
from tests.gateway.wire import parent_delegating
from tests.polling import until

NAME = "divorce papers of Ana Souza.pdf"
GOAL = "summarise the lab results of Ana Souza"


def logged(caplog) -> list[str]:
    """Every record at INFO or above, whole (message and traceback)."""
    return [r.getMessage() + (r.exc_text or "") for r in caplog.records if r.levelno >= logging.INFO]


class Named:
    """A download source failing as the adapters word it, the file named (`platforms.telegram_files`)."""

    def __init__(self, failures: list[Exception], data: bytes = b"%PDF-1.4") -> None:
        self.failures, self.data, self.max_attachment_bytes = failures, data, 1000

    async def download(self, attachment: Attachment) -> bytes:
        if self.failures:
            raise self.failures.pop(0)
        return self.data


async def test_a_failed_download_is_logged_by_why_without_the_files_name(tmp_path: Path, caplog) -> None:
    doc = Attachment("document", NAME, "application/pdf", None, "d1")
    files = Named([NetworkError(f"downloading {NAME} failed: HTTP 502", method="file"),
                   Forbidden(f"downloading {NAME} failed: HTTP 403", method="file")])
    with caplog.at_level(logging.INFO):
        prepared = await prepare(files, "telegram", (doc,), "read this", workspace=tmp_path, folder="s-1",
                                 supports_vision=True, clock=FakeClock(start=0.0))
    assert len(prepared.notes) == 1  # the user is still told, by name, in their own chat
    lines = logged(caplog)
    assert any("HTTP 502" in line for line in lines) and any("HTTP 403" in line for line in lines)
    assert not [line for line in lines if "Ana Souza" in line]


def test_a_file_the_disk_refuses_is_logged_by_why_without_its_name() -> None:
    # No test can fill a disk: the error is as the system raises it when making the file's temporary name.
    from gateway.attachments import _unnamed as unnamed
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f".{safe_name(NAME)}-2.{'0' * 32}.part")
    assert unnamed(full, NAME) == "[Errno 28] No space left on device"
    taken = FileExistsError(f"no free name for {safe_name(NAME)} in /srv/ws/attachments/telegram/42")
    assert unnamed(taken, NAME) == "no free name for <file> in /srv/ws/attachments/telegram/42"


async def test_a_stored_file_whose_folder_cannot_be_flushed_is_warned_of_without_its_name(
        tmp_path: Path, caplog, folders_not_flushable) -> None:
    doc = Attachment("document", NAME, "application/pdf", None, "d1")
    with caplog.at_level(logging.INFO):
        await prepare(Named([]), "telegram", (doc,), "read this", workspace=tmp_path,
                      folder=chat_folder("telegram", "42"), supports_vision=True)
    lines = logged(caplog)
    assert any("could not be flushed" in line for line in lines)
    assert not [line for line in lines if "Ana" in line]


async def test_the_temporary_files_a_crash_left_are_logged_by_folder(tmp_path: Path, gateways, caplog) -> None:
    config = make_config(tmp_path)
    left = tmp_path / "state" / "workspace" / "attachments" / "telegram" / "42" / f".{safe_name(NAME)}.{'0' * 32}.part"
    left.parent.mkdir(parents=True)
    left.write_bytes(b"half a file")
    lock = state_lock.hold(tmp_path / "state")  # as `switchboard run` holds it: no other process writes there
    try:
        with caplog.at_level(logging.INFO):
            await gateways(config, [RecordingAdapter()])
    finally:
        lock.release()
    assert not left.exists()
    lines = logged(caplog)
    assert any("removed 1 temporary files" in line and "attachments/telegram/42" in line for line in lines)
    assert not [line for line in lines if "Ana" in line]


async def test_a_relaunch_the_route_refuses_is_logged_without_the_tasks_goal(tmp_path, llm, gateways, caplog) -> None:
    main, fast = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY)
    never = asyncio.Event()

    async def hanging(body: dict) -> dict:
        await never.wait()
        return {"text": "never"}

    main.respond_with(parent_delegating({"goal": GOAL, "route": "fast"}, final="on it", children=hanging))
    fast.respond_with(hanging)
    routed = routed_config(tmp_path, main, fast, deep=main, mode="background")
    resume = {"on_restart": "resume"}
    chat = RecordingAdapter()
    gateway = await gateways(dataclasses.replace(routed, lifecycle=make_config(tmp_path, lifecycle=resume).lifecycle),
                             [chat])
    await chat.say("look at the lab results")
    await chat.wait_for(lambda: "on it" in chat.texts())
    await until(lambda: fast.requests)  # the child is under way, on its route, when the gateway stops
    await gateway.stop(grace=0)

    # Started again with the route gone: the task cannot run again, and the chat is told so.
    kept = {name: route for name, route in routed.delegation.model_map.items() if name != "fast"}
    config = dataclasses.replace(gateway.config, delegation=dataclasses.replace(routed.delegation, model_map=kept))
    chat2 = RecordingAdapter()
    with caplog.at_level(logging.INFO):
        gateway2 = await gateways(config, [chat2])
        await chat2.wait_for(lambda: chat2.messages)
        await settled(gateway2)
    lines = logged(caplog)
    [refusal] = [line for line in lines if "cannot relaunch" in line]
    assert "no route 'fast'" in refusal or "model_map" in refusal
    assert not [line for line in lines if "Ana Souza" in line]
