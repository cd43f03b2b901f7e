"""The web chat page (chat.js) rendering a history's answers while idle, a piece at a time (markdown.js's
`renderer`), in a real headless chromium against the adapter alone: what happens to an answer met half rendered.
An answer shows as typed until its last piece is done, and what comes meanwhile wins over the pieces already built:
an edit, live or brought by a reconnect, shows the new text, not the old one finished; a print shows it rendered,
and once only; an answer removed stops its render, and the answers the next history brings are rendered; a
reconnect bringing it unchanged lets its render go on; a streaming answer grows while an older one renders.
Right-to-left text still reads so once rendered, also when its render threw (the browser finds its direction
itself, dir="auto", which a render takes off while adding nodes), and a browser without idle callbacks (Safari)
renders the history all the same.

The page's idle moments are held by the test (`HELD_IDLE`) and given a number of pieces at a time, so an answer is
met at a piece the test chose."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from platforms.base import Outbound
from tests.scenarios.test_web_chat_history_rendered_near import RENDERED
from tests.scenarios.test_web_chat_history_rendered_when_idle import ALL_RENDERED, HELD_IDLE, IDLE_UNTIL_DONE
from tests.scenarios.test_web_chat_screen_reader import reconnect_after
from tests.web_client import Intake, chat_alone, open_chat

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

OLD = "## Old\n\nold **text** here\n\n" + "- item\n" * 200  # about 400 pieces: a line read, a block built
RTL = "## خطوة\n\nمرحبا **بالعالم** هنا.\n\n" + "- بند\n" * 200
# Past the characters of the newest rendered as the page opens (chat.js's RENDER_AT_ONCE), and tall: the answers
# above it are rendered when idle, newest first.
NEWEST = "# Newest\n\n" + ("Words that make a tall answer. " * 4 + "\n\n") * 250
MIDWAY = 100  # pieces of OLD given once the answer below it (RTL) is rendered: it is under way, far from done
EVERY_100_MS = 100  # waited for by a timer: asked at each frame, the page had frames to draw, not idle moments
# Idle moments of one piece each (timeRemaining() says 0 at the second asking) until the answer `id` is rendered,
# then one of `pieces` pieces.
PIECES_PAST = f"""([id, pieces]) => {{
  const give = (n) => idle.splice(0).forEach((work) => work({{ timeRemaining: () => n-- > 0 ? 50 : 0 }}));
  while (idle.length && !({RENDERED})(id)) give(1);
  give(pieces);
}}"""
# An idle moment of `pieces` pieces.
GIVE = "(pieces) => idle.splice(0).forEach((work) => work({ timeRemaining: () => pieces-- > 0 ? 50 : 0 }))"
HTML = "(id) => document.querySelector(`[data-id=${id}] > .text`).innerHTML"
# The text's dir attribute, the direction it is laid out in, and whether it reads right to left.
DIRECTION = """(id) => { const text = document.querySelector(`[data-id=${id}] > .text`);
  return [text.getAttribute("dir"), getComputedStyle(text).direction, text.matches(":dir(rtl)")]; }"""
READS_RTL = ["auto", "rtl", True]
# The first node of the answer `id` as it shows now, kept to tell whether it is rendered again.
KEEP_FIRST = "(id) => { window.kept = document.querySelector(`[data-id=${id}] > .text`).firstElementChild; }"
STILL_SHOWN = "() => kept.isConnected"
# The nodes of `text` rendered at one go, as the page renders a live answer.
AT_ONE_GO = """(text) => { const into = document.createElement("div");
  SwitchboardMarkdown.render(text, into); return into.innerHTML; }"""
# markdown.js reads the characters of the entity references of a text with DOMParser: one of "&boom;" throws.
BOOM = """const parse = DOMParser.prototype.parseFromString;
DOMParser.prototype.parseFromString = function (html, type) {
  if (html.includes("boom")) throw new Error("boom");
  return parse.call(this, html, type);
};"""


def answer(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "assistant", "kind": "reply", "text": text, "time": 1.0, "edited": False}


@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[tuple[Any, Intake, str]]:
    intake = Intake()
    intake.messages = [answer("m0", OLD), answer("r0", RTL), answer("m1", NEWEST)]
    async with chat_alone(intake, tmp_path / "files") as (adapter, base):
        yield adapter, intake, base


async def opened_with_old_half_rendered(page: Any, base: str) -> None:
    await page.add_init_script(HELD_IDLE)
    await open_chat(page, f"{base}/chat?chat=c1")
    await page.wait_for_function("() => idle.length")  # asked for once the page had opened
    assert await page.evaluate(RENDERED, "m1")  # the newest, at once
    await page.evaluate(PIECES_PAST, ["r0", MIDWAY])
    assert await page.evaluate(RENDERED, "r0")
    assert not await page.evaluate(RENDERED, "m0")  # as typed until its last piece is done
    assert await page.text_content("[data-id=m0] > .text") == OLD


async def rendered_at_one_go(page: Any, text: str) -> str:
    return await page.evaluate(AT_ONE_GO, text)


async def test_an_answer_edited_live_while_half_rendered_shows_the_edit(served, page) -> None:
    adapter, _, base = served
    await opened_with_old_half_rendered(page, base)

    await adapter.edit("c1", None, "m0", "## New\n\nnew text")
    await page.get_by_role("heading", name="New", exact=True).wait_for()
    await page.evaluate(KEEP_FIRST, "m0")
    await page.evaluate(IDLE_UNTIL_DONE)

    assert await page.evaluate(STILL_SHOWN)  # not rendered again (a link focused in it would lose the focus)
    assert await page.evaluate(HTML, "m0") == await rendered_at_one_go(page, "## New\n\nnew text")


async def test_printing_while_an_answer_is_half_rendered_prints_it_rendered_once(served, page) -> None:
    _, _, base = served
    await opened_with_old_half_rendered(page, base)

    await page.pdf()
    assert await page.evaluate(RENDERED, "m0")
    await page.evaluate(KEEP_FIRST, "m0")
    await page.evaluate(IDLE_UNTIL_DONE)

    assert await page.evaluate(STILL_SHOWN)
    assert await page.evaluate(HTML, "m0") == await rendered_at_one_go(page, OLD)
    assert await page.get_by_role("heading", name="Old", exact=True).count() == 1


async def test_an_answer_removed_while_half_rendered_leaves_the_next_history_rendered(served, page) -> None:
    adapter, intake, base = served
    await opened_with_old_half_rendered(page, base)

    await adapter.delete("c1", None, "m0")
    await page.wait_for_selector("[data-id=m0]", state="detached")
    await page.evaluate(IDLE_UNTIL_DONE)
    # More than a short drop's few (rendered at once, read out), above a newest past what is rendered at once.
    intake.messages[:] = [answer(f"n{k}", OLD) for k in range(4)] + [answer("m2", NEWEST)]
    await reconnect_after(page, adapter, intake, [])
    await page.wait_for_function("() => idle.length")
    await page.evaluate(IDLE_UNTIL_DONE)

    for k in range(4):
        assert await page.evaluate(HTML, f"n{k}") == await rendered_at_one_go(page, OLD)


async def test_a_reconnect_bringing_a_half_rendered_answer_unchanged_lets_its_render_go_on(served, page) -> None:
    adapter, intake, base = served
    await opened_with_old_half_rendered(page, base)

    await reconnect_after(page, adapter, intake, [])
    assert not await page.evaluate(RENDERED, "m0")
    await page.evaluate(IDLE_UNTIL_DONE)

    assert await page.evaluate(HTML, "m0") == await rendered_at_one_go(page, OLD)


async def test_a_reconnect_bringing_a_half_rendered_answer_edited_renders_the_edit(served, page) -> None:
    adapter, intake, base = served
    await opened_with_old_half_rendered(page, base)
    edited = "## Edited\n\n" + "- x\n" * 50

    intake.messages[0] = {**answer("m0", edited), "edited": True}  # as the store reads a message edited since
    await reconnect_after(page, adapter, intake, [])
    assert await page.text_content("[data-id=m0] > .text") == edited  # as typed, until rendered
    await page.evaluate(IDLE_UNTIL_DONE)

    assert await page.evaluate(HTML, "m0") == await rendered_at_one_go(page, edited)


async def test_a_streaming_answer_grows_while_an_older_one_renders(served, page) -> None:
    adapter, _, base = served
    await opened_with_old_half_rendered(page, base)
    sent = await adapter.send(Outbound(chat_id="c1", thread_id=None, text="# Live\n\nA", idempotency_key="live"))
    live = f"[data-id={sent.message_id}] > .text"
    await page.wait_for_selector(live)

    text = "# Live\n\nA"
    for _ in range(4):
        text += " **more**"
        await adapter.edit("c1", None, sent.message_id, text)
        await page.wait_for_function("([live, words]) => document.querySelector(live).textContent.endsWith(words)",
                                     arg=[live, text.replace("**", "")[len("# Live\n\n"):]])
        await page.evaluate(GIVE, 3)  # a few pieces of the older one between two of its growths
    assert not await page.evaluate(RENDERED, "m0")
    await page.evaluate(IDLE_UNTIL_DONE)

    assert await page.evaluate(HTML, sent.message_id) == await rendered_at_one_go(page, text)
    assert await page.evaluate(HTML, "m0") == await rendered_at_one_go(page, OLD)


async def test_right_to_left_text_reads_right_to_left_once_rendered(served, page) -> None:
    adapter, _, base = served
    await opened_with_old_half_rendered(page, base)

    assert await page.evaluate(DIRECTION, "r0") == READS_RTL  # rendered when idle
    await page.evaluate(IDLE_UNTIL_DONE)
    assert await page.evaluate(DIRECTION, "m0") == ["auto", "ltr", False]
    await adapter.edit("c1", None, "m1", RTL)  # rendered at once
    await page.get_by_role("heading", name="خطوة", exact=True).nth(1).wait_for()
    assert await page.evaluate(DIRECTION, "m1") == READS_RTL


async def test_without_idle_callbacks_as_in_safari_the_history_is_rendered_all_the_same(served, page) -> None:
    _, _, base = served
    await page.add_init_script("window.requestIdleCallback = undefined;")
    await open_chat(page, f"{base}/chat?chat=c1")

    await page.wait_for_function(ALL_RENDERED, polling=EVERY_100_MS)
    assert await page.evaluate(HTML, "m0") == await rendered_at_one_go(page, OLD)
    assert await page.evaluate(DIRECTION, "r0") == READS_RTL


async def test_right_to_left_text_whose_render_threw_still_reads_right_to_left(tmp_path, page) -> None:
    intake = Intake()
    failing = "## خطوة\n\nمرحبا &boom; هنا.\n\n" + "- بند\n" * 200
    intake.messages = [answer("b0", failing), answer("m1", NEWEST)]
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        await page.add_init_script(HELD_IDLE + BOOM)  # never idle: rendered as it comes near
        await open_chat(page, f"{base}/chat?chat=c1")
        assert await page.evaluate(DIRECTION, "b0") == READS_RTL  # as typed

        async with page.expect_event("pageerror") as thrown:
            await page.eval_on_selector("[data-id=b0]", "(el) => el.scrollIntoView()")
        assert "boom" in str(await thrown.value)

        assert await page.text_content("[data-id=b0] > .text") == failing  # still there, as typed
        assert await page.evaluate(DIRECTION, "b0") == READS_RTL


async def test_an_answer_whose_idle_render_throws_stays_as_typed_and_the_others_are_rendered(tmp_path, page) -> None:
    # Thrown out of the idle renders, it ended them for the page's life: the answers above it, and every history a
    # reconnect brought, stayed as typed.
    intake = Intake()
    failing = "## Failing\n\nhere &boom; it is.\n\n" + "- item\n" * 20
    intake.messages = [answer("m0", OLD), answer("b0", failing), answer("m1", NEWEST)]
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        await page.add_init_script(HELD_IDLE + BOOM)
        await open_chat(page, f"{base}/chat?chat=c1")
        await page.wait_for_function("() => idle.length")
        async with page.expect_event("pageerror") as thrown:
            await page.evaluate(IDLE_UNTIL_DONE)
        assert "boom" in str(await thrown.value)
        assert await page.evaluate(RENDERED, "m0")  # the answer above it, rendered all the same
        assert await page.text_content("[data-id=b0] > .text") == failing  # as typed


async def test_a_newest_answer_whose_render_throws_leaves_the_rest_of_the_history_rendered(tmp_path, page) -> None:
    # Rendered at once as the page opens, its throw cut the history's handling off: nothing above it was ever
    # rendered while idle.
    intake = Intake()
    failing = "## Failing\n\nhere &boom; it is."
    intake.messages = [answer("m0", OLD), answer("b0", failing)]
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        await page.add_init_script(HELD_IDLE + BOOM)
        async with page.expect_event("pageerror") as thrown:
            await open_chat(page, f"{base}/chat?chat=c1")
        assert "boom" in str(await thrown.value)
        await page.wait_for_function("() => idle.length")
        await page.evaluate(IDLE_UNTIL_DONE)
        assert await page.evaluate(RENDERED, "m0")
        assert await page.text_content("[data-id=b0] > .text") == failing  # as typed
