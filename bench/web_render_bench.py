"""Opening the web chat page on a history of long answers, in headless chromium (brief: fifty answers of 50 KB each
froze the tab for five seconds).

The adapter alone serves a history of `ANSWERS` replies of `SIZE` characters each, written as a model writes one
(bench/split_bench.py's `reply`: headings, lists, code, tables, links); each run opens the page in a fresh context
and waits for it to show the newest answer's end at the bottom. Prints, per run and as the median: the milliseconds
from opening to that, Chromium's own milliseconds of layout, of style and of the Markdown rendering, and how many
answers it laid out (the others' content is skipped while out of sight), all as they stood then; and the milliseconds
from opening until every answer's Markdown was rendered (the page renders the rest when idle, after it opened), and
the longest task the page's main thread ran meanwhile (Chromium's long tasks, over 50 ms; 0 if none was): a key typed
in the box while that one runs waits for its end.

Needs chromium and Playwright, as the browser tests do (tests/browser.py).
Run: .venv/bin/python bench/web_render_bench.py [runs] [answers] [size]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import describe  # noqa: E402
from bench.split_bench import reply  # noqa: E402
from platforms.web import WebChatAdapter  # noqa: E402
from tests.browser import CHROMIUM, FLAGS  # noqa: E402
from tests.web_client import Intake, serve  # noqa: E402

ANSWERS = 50
SIZE = 50_000

# The Markdown renderer timed as chat.js calls it to render a message at one go (it reads `SwitchboardMarkdown.render`
# once, at its start); not what it renders a piece at a time when idle (`renderer`), after the page opened.
TIMED_RENDER = """
  let markdown;
  window.rendering = { calls: 0, ms: 0 };
  Object.defineProperty(window, "SwitchboardMarkdown", { configurable: true, get: () => markdown, set: (value) => {
    markdown = { ...value, render: (text, into) => {
      const started = performance.now();
      value.render(text, into);
      rendering.ms += performance.now() - started;
      rendering.calls++;
    } };
  } });
"""
# From the page's start, frames are asked for until it has opened and the bench has read what it measures then (the
# page renders the rest when idle: not before), as when the bench asked after the page connected. Resolves with the
# time (Date.now()) and the Markdown rendering as they stood then.
SETTLED = """
  window.measured = false;
  window.settled = new Promise((done) => {
    const busy = () => measured || requestAnimationFrame(busy);
    const opened = () => done({ at: Date.now(), ...rendering }) || busy();
    const check = () => {
      const list = document.getElementById("messages");
      list && list.children.length && list.scrollHeight - list.scrollTop - list.clientHeight < 2
        ? requestAnimationFrame(() => requestAnimationFrame(opened)) : requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  });
"""
# The long tasks (over 50 ms) that began once the page had opened (`measured`, the time): the renders when idle.
LONG_TASKS = """
  window.longTasks = [];
  new PerformanceObserver((found) => {
    longTasks.push(...found.getEntries().filter((task) => measured && task.startTime >= measured)
      .map((task) => task.duration));
  }).observe({ type: "longtask" });
"""
# Watched, not polled: asking at each frame, the page was never idle long enough to render the rest.
ALL_RENDERED = """() => new Promise((done) => {
  const list = document.getElementById("messages");
  const all = () => [...list.querySelectorAll(":scope > article > .text")].every((text) => text.childElementCount);
  if (all()) return done();
  const watch = new MutationObserver(() => all() && (watch.disconnect(), done()));
  watch.observe(list, { childList: true, subtree: true });
})"""
FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
LAID_OUT = """() => [...document.querySelectorAll("#messages > article > .text")]
  .filter((text) => text.checkVisibility({ contentVisibilityAuto: true })).length"""


async def open_once(browser, url: str) -> dict[str, float]:
    context = await browser.new_context(viewport={"width": 900, "height": 700})
    try:
        page = await context.new_page()
        await page.add_init_script(TIMED_RENDER + SETTLED + LONG_TASKS)
        cdp = await context.new_cdp_session(page)
        await cdp.send("Performance.enable")
        started = time.time()  # the page's Date.now() is the same clock
        await page.goto(url)
        await page.wait_for_selector("body[data-state=connected]", timeout=120_000)
        opened = await page.evaluate("settled")
        metrics = {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}
        laid_out = await page.evaluate(LAID_OUT)
        await page.evaluate("measured = performance.now()")
        await page.evaluate(ALL_RENDERED)
        all_rendered = time.time() - started
        await page.evaluate(FRAMES)  # the last render's long task reported
        longest = await page.evaluate("Math.max(0, ...longTasks)")
        return {"open": opened["at"] - started * 1000, "layout": metrics["LayoutDuration"] * 1000,
                "style": metrics["RecalcStyleDuration"] * 1000, "markdown": opened["ms"],
                "renders": opened["calls"], "laid out": laid_out, "all rendered": all_rendered * 1000,
                "longest task": longest}
    finally:
        await context.close()


async def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    answers = int(sys.argv[2]) if len(sys.argv) > 2 else ANSWERS
    size = int(sys.argv[3]) if len(sys.argv) > 3 else SIZE
    from playwright.async_api import async_playwright

    text = reply(size)
    intake = Intake()
    intake.messages = [{"id": f"m{n}", "role": "assistant", "kind": "reply", "text": text, "time": float(n),
                        "edited": False} for n in range(answers)]
    print(f"web_render_bench on {describe()}: {answers} answers of {len(text)} characters")
    with tempfile.TemporaryDirectory() as files:
        adapter = WebChatAdapter(history_reader=intake.history, history_limit=max(answers, 1), files_dir=Path(files))
        await adapter.start(intake.take)
        runner, base = await serve(adapter)
        try:
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=list(FLAGS))
                results = [await open_once(browser, f"{base}/chat?chat=c1") for _ in range(runs)]
                await browser.close()
        finally:
            await adapter.stop()
            await runner.cleanup()
    width = {name: max(10, len(name) + 2) for name in results[0]}
    print(f"{'run':<7}" + "".join(f"{name:>{w}}" for name, w in width.items()))
    for i, result in enumerate(results, 1):
        print(f"{i:<7}" + "".join(f"{result[name]:>{w}.0f}" for name, w in width.items()))
    print(f"{'median':<7}" + "".join(f"{statistics.median(r[name] for r in results):>{w}.0f}"
                                     for name, w in width.items()))


if __name__ == "__main__":
    asyncio.run(main())
