"""The web chat page shows what the model writes as text, in a real headless chromium: a reply echoing a
stranger's markup, links to anything but a web or mail address, a file sent under a name that is markup.
Nothing of it runs; and another site's page cannot post to the chat nor frame it.

A real gateway serves the page, with a scripted model; every wait is for something on a page, never for time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp.web import Request, Response, get

from agent.models.scripted import ScriptedModel
from tests.web_client import get_history, open_chat, serve_routes, type_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

EVIL = '"><img src=x onerror=pwned=1><svg onload=pwned=2></script><script>pwned=3</script>'
LINKS = ("[a](javascript:pwned=4) [b](JaVaScRiPt:pwned=4) [c]( javascript:pwned=4) [d](&#106;avascript:pwned=4) "
         "[e](java&#x0A;script:pwned=4) [f](data:text/html,<script>pwned=4</script>) [g](vbscript:pwned=4) "
         "<javascript:pwned=4> ![h](https://example.com/h.png) ![i](x onerror=pwned=4) "
         '[j](https://example.com/j "\\"><svg onload=pwned=4>") [k](https://example.com/k"><svg onload=pwned=4>) '
         "[l] [m]\n\n[l]: javascript:pwned=4\n[m]: https://example.com/m\n\n```html\n<script>pwned=5</script>\n```")
FILE_NAME = '"><img src=x onerror=pwned=6>.html'
# Each policy violation the page met (an inline handler or script the Content-Security-Policy blocked):
# none at all means nothing the model wrote became markup, not even markup the policy then stopped.
WATCH = """window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(e.violatedDirective));"""
# Another site's page (another origin: another port) posting a message to the chat (MESSAGES, the API's URL)
# with what a page can send unasked: a form posted as text/plain whose body reads as the API's JSON, and a
# no-cors fetch; and framing the chat (CHAT). Each, once answered, counts in `done`.
ATTACK = """<!doctype html><body>
<iframe name="sink"></iframe>
<form id="form" method="post" action="MESSAGES" enctype="text/plain" target="sink">
  <input name='{"chat": "c1", "text": "from the form", "key": "key-form-00001", "x": "' value='"}'></form>
<iframe id="framed" src="CHAT"></iframe>
<script>
  window.done = 0;
  const one = () => { window.done++; };
  document.getElementsByName("sink")[0].addEventListener("load", one, { once: true });
  document.getElementById("framed").addEventListener("load", one, { once: true });
  document.getElementById("form").submit();
  fetch("MESSAGES", { method: "POST", mode: "no-cors",
    body: JSON.stringify({ chat: "c1", text: "from the fetch", key: "key-fetch-00001" }) }).then(one, one);
</script></body>"""


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    async with web_chats(tmp_path) as start:
        yield start


async def test_markup_and_unsafe_links_the_model_writes_show_as_text_and_run_nothing(chat, page, tmp_path) -> None:
    (tmp_path / "state" / "workspace" / FILE_NAME).write_text("<script>pwned=7</script>")
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": FILE_NAME, "caption": EVIL}}]},
        {"text": f"You wrote {EVIL}\n\n{LINKS}"}]]})  # fmt: skip
    web = await chat(agent_model=model, agent={"toolsets": ["file"]})
    await page.add_init_script(WATCH)
    await open_chat(page, f"{web.base}/chat?chat=c1")
    await type_message(page, EVIL)
    await page.wait_for_selector("[data-kind=reply]")
    shown = await page.evaluate("""() => ({
      texts: [...document.querySelectorAll("#messages .text")].map((text) => text.textContent),
      file: document.querySelector("#messages .file a").textContent,
      links: [...document.querySelectorAll("#messages a")].map((a) => a.getAttribute("href")),
      markup: document.querySelectorAll("#messages img, #messages svg, #messages script, #messages iframe").length,
      pwned: window.pwned ?? null, violations: window.__violations })""")
    mine, caption, reply = shown["texts"]
    assert mine == caption == EVIL and reply.startswith(f"You wrote {EVIL}")
    assert "[a](javascript:pwned=4)" in reply and "<script>pwned=5</script>" in reply  # as typed, code as code
    assert shown["file"] == FILE_NAME
    assert shown["links"][0].startswith(f"{web.base}/chat/api/files/")  # beside the page, not at the root
    assert shown["links"][1:] == ["https://example.com/h.png", "https://example.com/j", "https://example.com/k",
                                  "https://example.com/m"]
    assert (shown["markup"], shown["pwned"], shown["violations"]) == (0, None, [])
    # Had some text become markup after all, the page's policy would stop what it ran.
    await page.evaluate("""() => document.querySelector("#messages").insertAdjacentHTML("beforeend",
      '<p><img src=x onerror="pwned=8"><a id=js href="javascript:pwned=9">x</a></p>')""")
    await page.click("#js")
    await page.wait_for_function("() => window.__violations.length >= 2")
    assert await page.evaluate("window.pwned ?? null") is None


async def test_another_sites_page_cannot_post_to_the_chat_nor_frame_it(chat, page) -> None:
    web = await chat()
    attack = ATTACK.replace("MESSAGES", f"{web.base}/chat/api/messages").replace("CHAT", f"{web.base}/chat")

    async def attacker(request: Request) -> Response:
        return Response(text=attack, content_type="text/html")

    runner, other_site = await serve_routes([get("/", attacker)])
    try:
        await page.goto(other_site)
        await page.wait_for_function("() => window.done === 3")
    finally:
        await runner.cleanup()
    async with aiohttp.ClientSession() as http:
        assert await get_history(http, web.base, "c1") == []
    assert not page.frame(name="framed").url.startswith(web.base)  # refused: chromium's error page instead
