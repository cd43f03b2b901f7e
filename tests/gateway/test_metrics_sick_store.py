"""/metrics while the state database refuses reads, and the bound on the ``model`` label."""

from __future__ import annotations

import logging
import sqlite3

import aiohttp

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import samples, served

MAX_MODELS, OTHER_MODEL = 20, "other"
"""The bound docs/console.md states (`gateway.metrics.MAX_MODELS`)."""


async def scrape(base: str):
    async with aiohttp.ClientSession() as http, http.get(f"{base}/metrics") as response:
        assert response.status == 200, await response.text()
        return samples(await response.text())


def refuse_reads(db) -> None:
    """Every read of the store raises, as they do while a full disk keeps it from writing again
    what SQLite rolled back (`SqliteDatabase.read`)."""

    def refused(*_: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    db.read = db.read_one = refused


def allow_reads(db) -> None:
    del db.read, db.read_one


async def test_a_read_the_store_refuses_keeps_its_last_gauges_and_storage_up_reports_it(tmp_path, gateways,
                                                                                         caplog) -> None:
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]})
    await chat.say("hello")
    await settled(gateway)
    db = gateway.store.db
    async with served(gateway) as server:
        assert (await scrape(server.url))("switchboard_storage_up") == 1
        with caplog.at_level(logging.INFO, logger="gateway.metrics"):
            refuse_reads(db)
            try:
                sick = await scrape(server.url)
                await scrape(server.url)  # logs nothing more
            finally:
                allow_reads(db)
            well = await scrape(server.url)

    assert db.write_error is None  # no write was refused: the gauge says so from the read alone
    assert sick("switchboard_storage_up") == 0
    # As last read: no gap, nothing made up.
    assert sick.labels("switchboard_outbox_messages", "status") == {"pending", "failed", "dead"}
    assert sick("switchboard_live_read_up", group="outbox") == 0
    assert sick("switchboard_sessions") == 1  # what memory holds is still there
    assert sick("switchboard_inbound_events_total", platform="chat") == 1
    assert sick.labels("switchboard_subagents", "state") == {"pending", "starting", "running", "cancel_requested"}
    assert "switchboard_last_inbound_age_seconds" in sick.names
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "gateway.metrics"]
    assert logged == [
        ("WARNING", "/metrics: reading the outbox failed, so its last read is shown until it can be read: "
                    "OperationalError: disk I/O error"),
        ("INFO", "/metrics: the outbox read again"),
    ]
    assert well("switchboard_storage_up") == 1
    assert "switchboard_outbox_messages" in well.names


async def test_a_provider_naming_a_new_model_in_each_reply_adds_no_series_past_the_bound(tmp_path, gateways,
                                                                                         caplog) -> None:
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"text": "hi"}]] * (MAX_MODELS + 5)}, name="gpt-0")
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    for n in range(MAX_MODELS + 5):
        model.name = f"gpt-{n}"  # what the provider's reply says it answered as
        await chat.say(f"hello {n}")
        await settled(gateway)
    value = samples(gateway.metrics.exposition().decode())
    names = value.labels("switchboard_model_calls_total", "model")
    assert names == {*(f"gpt-{n}" for n in range(MAX_MODELS)), OTHER_MODEL}
    assert value("switchboard_model_calls_total", model=OTHER_MODEL, role="parent", outcome="ok") == 5
    assert value.labels("switchboard_model_tokens_total", "model") == names
    assert sum("more than 20 model names seen" in r.getMessage() for r in caplog.records) == 1
