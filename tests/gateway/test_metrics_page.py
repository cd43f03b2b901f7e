"""The /metrics page as Prometheus ingests it: only the families docs/console.md lists, and the series an
alert on a failure reads present, at zero, before the first failure."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import served

CONSOLE_MD = Path(__file__).resolve().parents[2] / "docs" / "console.md"


async def page(base: str) -> str:
    async with aiohttp.ClientSession() as http, http.get(f"{base}/metrics") as response:
        assert response.status == 200, await response.text()
        return await response.text()


async def test_the_page_holds_only_the_families_the_docs_list(tmp_path, gateways) -> None:
    # Each counter and histogram also came with an undocumented `<name>_created` gauge family: one more
    # series (a timestamp) per series, which the classic text format makes Prometheus store as a gauge.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]})
    async with served(gateway) as server:
        await chat.say("hello")
        await settled(gateway)
        text = await page(server.url)
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    listed = dict(re.findall(r"^\| `(switchboard_\w+)` \| (\w+) \|", CONSOLE_MD.read_text(encoding="utf-8"), re.M))
    assert types == listed
    assert "_created" not in text


async def test_failed_turns_and_deliveries_are_at_zero_before_the_first_one(tmp_path, gateways) -> None:
    # A series that first appears at 1 is no increase to Prometheus: `increase(...{outcome="failed"}[10m]) > 0`
    # missed the first failed turn or delivery of each process, the only one where they are rare.
    telegram, slack = RecordingAdapter("telegram"), RecordingAdapter("slack")
    gateway = await gateways(make_config(tmp_path), [telegram, slack])
    async with served(gateway) as server:
        text = await page(server.url)
    found = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for family in text_string_to_metric_families(text) for s in family.samples}
    for platform in ("telegram", "slack"):
        for kind in ("message", "completion"):
            for outcome in ("done", "stopped", "superseded", "shutdown", "failed"):
                key = ("switchboard_turns_total", (("kind", kind), ("outcome", outcome), ("platform", platform)))
                assert found.get(key) == 0, key
        for kind in ("reply", "completion", "notice", "interim", "command"):
            for outcome in ("sent", "failed"):
                key = ("switchboard_deliveries_total", (("kind", kind), ("outcome", outcome), ("platform", platform)))
                assert found.get(key) == 0, key
