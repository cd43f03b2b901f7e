"""The errors the console shows are cut, as its message previews are: a child's error may be a whole page.

A model server behind a proxy that answers with its own HTML page (a 502) fails the child with that page
in its error, tens of kilobytes. The console masked it whole at every refresh, up to ten times a second,
for every task of its 30 delegations, and sent it to every page, where it filled the Tasks column."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import served
from tests.gateway.test_console import TWO_TASKS, state

KEY = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789"
PAGE = f"502 Bad Gateway <html><body>{'<p>the upstream server did not answer</p>' * 2000}</body></html>"


async def test_a_childs_error_holding_a_whole_page_is_cut_and_still_masked(tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[TWO_TASKS, {"text": "on it"}], [{"text": "one failed"}]],
                           "leaf": lambda request: (
                               {"error": "bad_request", "message": f"key {KEY}: {PAGE}"}
                               if request.metadata["goal"] == "apples" else {"text": "pears are green"})})
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "background"}), [chat], model=model)
    async with served(gateway) as server:
        await chat.say("compare", chat="c1")
        await chat.wait_for(lambda: any(t.startswith("one failed") for t in chat.texts()))
        await settled(gateway)
        [delegation] = (await state(server.url))["delegations"]
    [error] = [t["error"] for t in delegation["tasks"] if t["error"]]
    assert len(PAGE) > 50_000 and len(error) <= 500  # as the outbox keeps its errors
    assert error.startswith("key ***: 502 Bad Gateway <html>") and error.endswith("…")
