"""Review of 58600e67 (storage scoped by the gateway's name): a tab that, before the upgrade, used one gateway at two
addresses kept a refused message, a queued send or a draft under each address's keys. The first address opened after
the upgrade makes the gateway's key; the second found it there and never took over its own address's: its refused
message (the text's only copy), its unsent message and its draft were never shown or sent again."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scenarios.test_web_chat_one_gateway_two_paths import TOKEN, opened, refuse, two_paths
from tests.web_client import type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


async def as_before_the_upgrade(page: Any, address: str) -> None:
    """What the tab keeps under the gateway's name, put under ``address`` as the previous version kept it."""
    await page.evaluate("""(address) => {
        const named = document.querySelector('meta[name="switchboard-scope"]').content;
        for (const storage of [sessionStorage, localStorage]) {
            for (const key of Object.keys(storage)) {
                if (!key.endsWith("@" + named)) continue;
                storage.setItem(key.slice(0, -named.length) + address, storage.getItem(key));
                storage.removeItem(key);
            }
        }
    }""", address)


async def test_what_the_second_address_kept_before_the_upgrade_is_not_lost(page, tmp_path) -> None:
    async with two_paths(tmp_path) as proxy:
        # Before the upgrade, at /b: a refused message, one queued behind nothing yet sent, a draft.
        assert await opened(page, f"{proxy.origin}/b/chat?chat=team#token={TOKEN}") == "connected"
        await page.route("**/chat/api/messages", refuse)
        await type_message(page, "refused at b")
        await page.locator("[data-kind=user].failed").wait_for()
        await page.fill("#input", "draft at b")
        await page.evaluate("() => new Promise((r) => setTimeout(r, 300))")  # the draft is saved
        await as_before_the_upgrade(page, "/b/chat/")
        await page.evaluate("""(queued) => sessionStorage.setItem(
            "switchboard.pending.team@/b/chat/", JSON.stringify([queued]))""",
                            {"key": "queuedatb-0123456789", "text": "queued at b"})
        await page.unroute("**/chat/api/messages")
        # After it, /a first (signed in there before): a refusal of its own there, a draft of its own.
        await page.evaluate("(t) => sessionStorage.setItem('switchboard.token@/a/chat/', t)", TOKEN)
        assert await opened(page, f"{proxy.origin}/a/chat?chat=team") == "connected"
        await page.route("**/chat/api/messages", refuse)
        await type_message(page, "refused at a")
        await page.locator("[data-kind=user].failed").wait_for()
        await page.unroute("**/chat/api/messages")
        await page.evaluate("""(queued) => sessionStorage.setItem("switchboard.pending.team@" +
            document.querySelector('meta[name="switchboard-scope"]').content, JSON.stringify([queued]))""",
                            {"key": "queuedata-0123456789", "text": "queued at a"})  # not sent before a reload
        # Then /b: what the tab kept for it is shown (the refused one) and sent (the queued one).
        assert await opened(page, f"{proxy.origin}/b/chat?chat=team") == "connected"
        await page.locator("[data-kind=user]:not(.failed) .text", has_text="queued at a").wait_for()
        sent = await page.locator("[data-kind=user]:not(.failed) .text").all_inner_texts()
        assert sent == ["queued at b", "queued at a"]  # both, in the order typed
        failed = await page.locator("[data-kind=user].failed .text").all_inner_texts()
        assert sorted(failed) == ["refused at a", "refused at b"]
        assert "draft at b" in await page.input_value("#input")
        left = await page.evaluate("Object.keys(sessionStorage).filter((k) => k.includes('@/b/chat/'))")
        assert left == [] or left == ["switchboard.token@/b/chat/"]
