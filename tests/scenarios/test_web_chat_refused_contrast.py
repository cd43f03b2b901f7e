"""A message the gateway refused (chat.css's "failed" bubble, red in a dashed outline), in a real headless chromium
against the adapter alone: every text in it, its code block too, reads at WCAG AA's 4.5:1 in the light and the dark
theme, as docs/platforms/web.md says of a refused message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.scenarios.test_web_chat_screen_reader import served  # noqa: F401
from tests.scenarios.test_web_chat_waiting_contrast import CONTRASTS
from tests.web_client import open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop


async def test_a_refused_message_with_code_reads_at_4_5_to_1_in_both_themes(served, page: Any) -> None:  # noqa: F811
    _, _, base = served

    async def refuse(route: Any) -> None:  # the gateway's final answer to this message
        await route.fulfill(status=400, content_type="application/json", body=json.dumps({"error": "too long"}))

    await page.route("**/chat/api/messages", refuse)
    await open_chat(page, f"{base}/chat?chat=c1")
    await type_message(page, "see `make test` and https://example.com\n```\nmake\n```")
    refused = await page.wait_for_selector("[data-kind=user].failed")
    faint = {}
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        ratios = await refused.evaluate(CONTRASTS)
        assert len(ratios) >= 6, ratios  # who, the text, the code, the link, the code block, the reason
        faint[scheme] = {text: ratio for text, ratio in ratios.items() if ratio < 4.5}
    assert faint == {"light": {}, "dark": {}}
