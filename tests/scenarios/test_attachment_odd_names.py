"""File names users send that a safe name or a note must not garble, end to end: a Telegram user sends a
document through FakeTelegram, the real aiogram adapter downloads it, the gateway stores it and answers."""

from __future__ import annotations

from pathlib import Path

from agent.testing import FakeOpenAIServer
from tests.scenarios.test_attachments_chat import Telegram, openai, openai_model, telegram, user_content

__all__ = ["openai", "telegram"]  # the fixtures this module's tests take


async def test_a_name_of_emoji_alone_keeps_its_extension(telegram: Telegram, openai: FakeOpenAIServer) -> None:
    # "📊.xlsx" lost its stem to the safe name and then its dot: stored as "xlsx", a file no spreadsheet reader
    # (nor anything else that goes by the extension) takes for what it is.
    await telegram.start(model=openai_model(openai))
    telegram.fake.push_document(42, b"PK\x03\x04 sheet", "📊.xlsx", caption="sum column B",
                                mime_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    assert await telegram.answered() == ["Nice picture."]
    (stored,) = [p for p in (telegram.workspace / "attachments" / "telegram" / "42").iterdir()]
    assert stored.name == "file.xlsx" and stored.read_bytes() == b"PK\x03\x04 sheet"
    assert "- attachments/telegram/42/file.xlsx (" in user_content(openai.requests[0])


async def test_a_right_to_left_override_in_a_refused_files_name_leaves_its_note_readable(
        telegram: Telegram, openai: FakeOpenAIServer, tmp_path: Path) -> None:
    # The override (shown "invoiceexe.pdf", an .exe in disguise) ran on past the name to the end of the
    # note's line: the user read "…from telegram; please send a smaller file." backwards.
    await telegram.start(model=openai_model(openai), cap=100)
    telegram.fake.push_document(42, b"x" * 5000, "invoice\u202efdp.exe", mime_type="application/x-msdownload")
    (note,) = await telegram.answered()
    assert note == "invoicefdp.exe is 4.9 KB, which is larger than the 100 bytes I can take on telegram; " \
                   "please send a smaller file."
    assert openai.requests == []
