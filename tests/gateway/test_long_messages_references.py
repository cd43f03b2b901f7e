"""Reference-style links in a message too long for its chat (`gateway.long_messages.split_bounded`): only a start
of the text is split, and the definitions at the text's end (``[r0]: https://…``) go with the parts that use them
as they do when the whole text is split (`gateway.link_references`), not left behind with the parts never sent."""

from __future__ import annotations

from agent.testing import FakeClock
from gateway.long_messages import split_bounded
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.splitting import split_text
from gateway.store import GatewayStore
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

DEFINITIONS = "\n".join(f"[r{i}]: https://example.com/{i}" for i in range(5))
TEXT = "\n\n".join(f"See [item {n}][r{n % 5}], then " + "word " * 8 for n in range(400)) + "\n\n" + DEFINITIONS
"""About 25 KB, its definitions at its end: 250 parts of a 100-character limit."""


def test_the_first_parts_carry_the_definitions_from_the_texts_end_as_the_whole_texts_do():
    parts = split_bounded(TEXT, 100, len, 3)
    assert len(parts) < 40 and parts[:3] == split_text(TEXT, 100)[:3]
    assert parts[0].endswith("\n\n[R0]: <https://example.com/0>")


def test_definitions_after_a_code_block_left_open_where_the_start_ends_are_carried_too():
    code = "\n".join(f"line {n} = [{n}]: x" for n in range(3000))  # a dump, `]:` and all, past the start
    text = f"See [the docs][d].\n\n```\n{code}\n```\n\n[d]: https://example.com/docs\n"
    parts = split_bounded(text, 100, len, 3)
    assert len(parts) < 40 and parts[:3] == split_text(text, 100)[:3]
    assert parts[0].startswith("See [the docs][d].") and parts[0].endswith("```\n\n[D]: <https://example.com/docs>")


def test_definitions_the_start_does_not_use_change_nothing():
    text = TEXT.replace("][r", "][x") + "\n\n" + "\n\n".join(f"[r{n}]: https://example.com/{n}" for n in range(99))
    assert split_bounded(text, 100, len, 3)[:3] == split_text(text, 100)[:3]


async def test_telegram_shows_the_first_parts_links_as_links(tmp_path):
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        await adapter.start(Sink())
        store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
        text = "\n\n".join(f"See [item {n}][r{n % 5}]: " + "loop " * 400 for n in range(60)) + "\n\n" + DEFINITIONS
        outbox = Outbox(store.outbox, {"telegram": adapter}, clock=FakeClock(),
                        files=OutboxFiles(tmp_path / "outbox-files"), max_parts=lambda _: 3)
        try:
            await outbox.start()
            await outbox.enqueue_long("telegram", "42", None, text, kind="reply", key="t1:reply", turn_id="t1")
            assert await outbox.flush(5)
            *shown, file = fake.messages["42"]
            assert len(shown) == 3 and file["document"]["file_name"] == "answer.md"
            for n, part in enumerate(shown):
                assert f'<a href="https://example.com/{n % 5}">item {n}</a>' in part["raw"]
                assert "][r" not in part["text"]
        finally:
            await outbox.close()
            await adapter.stop()
            store.close()


def test_a_definition_the_start_cuts_through_gives_no_address_cut_short():
    # The start ended within "[r0]: https://example.com/the/docs": the first parts linked to "https://example.com/t"
    # (the first definition of a label wins over the whole one written after the start), or showed "[item 0][r0]".
    body = "\n\n".join(f"See [item {n}][r0] then " + "word " * 50 for n in range(7))
    text = body + "\n\n[r0]: https://example.com/the/docs\n\nmore " + "tail " * 300
    for pad in range(40, 90, 3):  # each place in the definition's line the start's end may fall
        padded = "x" * pad + text
        parts = split_bounded(padded, 400, len, 3)
        assert parts[:3] == split_text(padded, 400)[:3], pad
        assert parts[0].endswith("[R0]: <https://example.com/the/docs>"), pad
