"""A message the web chat page sent and the gateway has not taken yet (chat.css's "pending" bubble), as a reader with
low vision sees it, in a real headless chromium against the adapter alone: its text reads at WCAG AA's 4.5:1 in the
light and the dark theme, and it looks unlike a sent message by more than being fainter."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scenarios.test_web_chat_screen_reader import served  # noqa: F401
from tests.web_client import open_chat, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

# The contrast ratio of each text in the element ("text": ratio) as it shows: its colour and its background's, each
# blended over what is under it, and an element with an opacity below 1 (itself or an ancestor) blended as a whole
# over what shows under that element.
CONTRASTS = """root => {
  const rgba = (css) => { const [r, g, b, a = 1] = css.match(/[\\d.]+/g).map(Number); return [r, g, b, a]; };
  const over = (top, under) => top.slice(0, 3).map((c, i) => c * top[3] + under[i] * (1 - top[3]));
  const lum = (c) => c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const shows = (el) => {
    const chain = [];
    for (let n = el; n; n = n.parentElement) chain.unshift(n);
    const groups = []; // [opacity, what shows under the element], innermost last
    const visible = (c) => groups.reduceRight((c, [alpha, under]) => over([...c, alpha], under), c);
    let local = [255, 255, 255];
    for (const n of chain) {
      const style = getComputedStyle(n);
      if (Number(style.opacity) < 1) groups.push([Number(style.opacity), visible(local)]);
      local = over(rgba(style.backgroundColor), local);
    }
    return [visible(over(rgba(getComputedStyle(el).color), local)), visible(local)];
  };
  const ratios = {};
  for (const el of [root, ...root.querySelectorAll("*")]) {
    const text = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.data).join("").trim();
    if (!text) continue;
    const [hi, lo] = shows(el).map(lum).sort((a, b) => b - a);
    ratios[text] = Math.round(100 * (hi + 0.05) / (lo + 0.05)) / 100;
  }
  return ratios;
}"""

LOOK = "e => { const s = getComputedStyle(e); return [s.borderTopStyle, s.fontStyle]; }"


async def test_a_waiting_message_reads_at_4_5_to_1_in_both_themes_and_is_marked_by_more_than_fading(
    served,  # noqa: F811
    page: Any,
) -> None:
    _, _, base = served

    async def away(route: Any) -> None:  # the gateway restarting: the message waits, retried
        await route.fulfill(status=503)

    await page.route("**/chat/api/messages", away)
    await open_chat(page, f"{base}/chat?chat=c1")
    await type_message(page, "see `make test` and https://example.com\n```\nmake\n```")
    waiting = await page.wait_for_selector("[data-kind=user].pending")
    sent = await page.wait_for_selector("[data-id='user:q0']")
    faint, alike = {}, []
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        ratios = await waiting.evaluate(CONTRASTS)
        assert len(ratios) >= 5, ratios  # who, the text, the code, the link, the code block
        faint[scheme] = {text: ratio for text, ratio in ratios.items() if ratio < 4.5}
        if await waiting.evaluate(LOOK) == await sent.evaluate(LOOK):
            alike.append(scheme)
    assert faint == {"light": {}, "dark": {}}
    assert alike == []  # told apart from a sent message by its shape too, not by a paler colour alone
