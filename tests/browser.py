"""Debian's chromium, driven by Playwright, for tests of the pages the gateway serves.

One browser per test session (`browser` fixture, on the session's event loop); each test
opens its own context, so pages never share storage. Never downloads a browser: it runs
``/usr/bin/chromium`` (``apt-get install -y chromium``; `.ci/run` installs it). Without it
the browser tests skip, except under CI (``$CI`` set), where they fail: CI must run them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

CHROMIUM = os.environ.get("SWITCHBOARD_CHROMIUM", "/usr/bin/chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    # This network is closed: without these, chromium keeps calling home and is refused.
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip


def _unavailable() -> str | None:
    if not (os.path.isfile(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"no chromium at {CHROMIUM} (apt-get install -y chromium)"
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    return None


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[object]:
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run: {reason}; .ci/run must install it")
        pytest.skip(reason)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=list(FLAGS))
        yield launched
        await launched.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser) -> AsyncIterator[object]:
    """A fresh page in its own context (its own localStorage and sessionStorage)."""
    context = await browser.new_context(viewport={"width": 900, "height": 700})
    context.set_default_timeout(15_000)
    page = await context.new_page()
    yield page
    await context.close()


# WCAG 2's contrast ratio of each element's own text against the background it is drawn on (the
# nearest opaque one, translucent ones blended over it): at least 4.5:1, 3:1 for large text.
# Elements under a translucent ancestor (opacity) are left out: their colours are not what shows.
# An empty input's placeholder counts as its text.
_CONTRAST = """() => {
  const rgba = (css) => { const [r, g, b, a = 1] = css.match(/[\\d.]+/g).map(Number); return [r, g, b, a]; };
  const over = (top, under) => top.slice(0, 3).map((c, i) => c * top[3] + under[i] * (1 - top[3])).concat(1);
  const lum = (c) => { const [r, g, b] = c.slice(0, 3).map((v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const background = (el) => {
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
      const c = rgba(getComputedStyle(node).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] === 1) break;
    }
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255, 1]);
  };
  const faint = (el) => { for (let n = el; n; n = n.parentElement) if (getComputedStyle(n).opacity !== "1") return true; return false; };
  const failures = [];
  for (const el of document.querySelectorAll("body *")) {
    // An empty box's placeholder is its text (it says what to type).
    const placeholder = el.placeholder && !el.value;
    const text = placeholder ? el.placeholder
      : [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.data).join("").trim();
    if (!text || !el.checkVisibility() || faint(el) || el.disabled) continue;
    const style = getComputedStyle(el, placeholder ? "::placeholder" : null);
    const bg = background(el);
    const fg = over(rgba(style.color), bg);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < needed) failures.push(`${el.tagName.toLowerCase()}.${el.className} "${text.slice(0, 30)}": ${ratio.toFixed(2)}`);
  }
  return failures;
}"""


async def contrast_failures(page) -> list[str]:
    """The elements whose text is too faint against its background on ``page`` as it shows now, each
    as ``tag.class "text": ratio``; empty when every text reads."""
    return await page.evaluate(_CONTRAST)
