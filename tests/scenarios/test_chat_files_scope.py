"""Files sent in one chat stay in that chat: end to end through the Telegram SDK and FakeTelegram,
a scripted model in another chat (or its subagent) asks the file tools for them and is refused."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent import ModelRequest
from gateway.app import Gateway
from gateway.testing import make_config, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

ALICE, BOB = 42, 43
SECRET = "attachments/telegram/42/door-code.txt"
REFUSED = (f"Error: {SECRET!r} is not this session's to use: it is in attachments/telegram/, where other people's "
           "files are kept and only attachments/telegram/43/ is this session's")


def asked(request: ModelRequest) -> str:
    return str(next(m["content"] for m in reversed(request.messages) if m["role"] == "user"))


def tool_answer(request: ModelRequest) -> dict:
    return {"text": f"tool: {request.messages[-1]['content']}"}


def parent(request: ModelRequest) -> dict:
    """"read P" and "list P" call the file tools, "delegate read P" hands the reading to a subagent;
    the answer is what the tool said. A message with a file is acknowledged."""
    if request.messages[-1]["role"] == "tool":
        return tool_answer(request)
    text = asked(request)
    if "[The user sent these files" in text:
        return {"text": "got it"}
    verb, _, path = text.partition(" ")
    if verb == "delegate":
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": path}}]}
    name, args = ("read_file", {"path": path}) if verb == "read" else ("list_files", {"path": path, "pattern": "**"})
    return {"tool_calls": [{"name": name, "arguments": args}]}


def leaf(request: ModelRequest) -> dict:
    if request.messages[-1]["role"] == "tool":
        return tool_answer(request)
    path = re.search(r"read (\S+)", asked(request)).group(1)
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]}


class Chats:
    def __init__(self, fake: FakeTelegram, tmp_path: Path) -> None:
        self.fake, self.tmp_path, self.gateway = fake, tmp_path, None
        self.workspace = tmp_path / "state" / "workspace"

    async def start(self) -> Gateway:
        config = make_config(self.tmp_path, platforms={"telegram": {"allow_all": True, "toolsets": ["file"]}},
                             delegation={"gateway_mode": "inline", "max_summary_chars": 1000})
        adapter = TelegramAdapter(self.fake.token, api_base=self.fake.base_url, polling_timeout=10)
        self.gateway = await start_gateway(config, [adapter], script={"parent": parent, "leaf": leaf})
        return self.gateway

    async def say(self, chat: int, text: str) -> str:
        """``text`` from ``chat``; the reply to it."""
        before = len(self.fake.messages[str(chat)])
        self.fake.push_message(chat, text)
        await self.fake.wait_for(lambda: len(self.fake.messages[str(chat)]) > before, timeout=10)
        return self.fake.messages[str(chat)][-1]["text"]


@pytest.fixture
async def chats(tmp_path) -> AsyncIterator[Chats]:
    async with FakeTelegram() as fake:
        chats = Chats(fake, tmp_path)
        await chats.start()
        chats.fake.push_document(ALICE, b"the door code is 4711\n", "door-code.txt", mime_type="text/plain")
        await fake.wait_for(lambda: [m["text"] for m in fake.messages[str(ALICE)]] == ["got it"], timeout=10)
        yield chats
        await chats.gateway.stop(grace=0)


async def test_a_file_sent_in_one_chat_is_read_there_but_refused_in_another(chats: Chats) -> None:
    assert (chats.workspace / SECRET).read_text() == "the door code is 4711\n"
    assert await chats.say(BOB, f"read {SECRET}") == f"tool: {REFUSED}"
    assert (await chats.say(BOB, "read attachments/telegram/43/../42/door-code.txt")).startswith(
        "tool: Error: 'attachments/telegram/43/../42/door-code.txt' is not this session's to use")
    assert await chats.say(ALICE, f"read {SECRET}") == "tool: the door code is 4711"  # the chat trims the newline


async def test_another_chats_folder_is_not_listed(chats: Chats) -> None:
    listing = await chats.say(BOB, "list .")
    assert "4711" not in listing and "attachments/telegram/42" not in listing
    assert "attachments/telegram/" in listing
    assert await chats.say(ALICE, "list attachments") == (
        "tool: attachments/telegram/\nattachments/telegram/42/\nattachments/telegram/42/door-code.txt")


async def test_a_subagent_of_another_chat_is_refused_too(chats: Chats) -> None:
    reply = await chats.say(BOB, f"delegate read {SECRET}")  # inline: the child's answer is in the one reply
    assert "is not this session's to use" in reply and "4711" not in reply


async def test_files_stored_before_chats_had_folders_stay_readable(chats: Chats) -> None:
    legacy = chats.workspace / "attachments" / "0123abcd1" / "report.txt"
    legacy.parent.mkdir()
    legacy.write_text("kept as it was\n")
    assert await chats.say(BOB, "read attachments/0123abcd1/report.txt") == "tool: kept as it was"


async def test_a_subagents_answer_kept_whole_for_one_chat_is_not_another_chats_to_read(chats: Chats) -> None:
    # An answer over delegation.max_summary_chars is cut for the parent and kept whole in the workspace,
    # which all chats share: it was kept in .switchboard/delegation/, which any chat could list and read
    # (or send_file to itself), so a subagent's summary of one chat's document reached another chat.
    chats.fake.push_document(ALICE, b"the door code is 4711; " * 80, "long.txt", mime_type="text/plain")
    await chats.fake.wait_for(lambda: len(chats.fake.messages[str(ALICE)]) == 2, timeout=10)
    answer = await chats.say(ALICE, "delegate read attachments/telegram/42/long.txt")
    kept = re.search(r"full text: read_file path=(\S+) ", answer).group(1)
    assert (await chats.say(ALICE, f"read {kept}")).startswith("tool: tool: the door code is 4711;")
    assert (await chats.say(BOB, f"read {kept}")).startswith(f"tool: Error: {kept!r} is not this session's to use")
    assert kept.rsplit("/", 1)[-1] not in await chats.say(BOB, "list .")
    assert kept.startswith("attachments/telegram/42/.switchboard/delegation/")
