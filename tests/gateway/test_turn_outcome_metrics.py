"""How a turn that ran no model ends, as /metrics and the traces tell it: a message its files' notes
answered is a turn done, not a failed one."""

from __future__ import annotations

import aiohttp
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.messages import Attachment
from tests.gateway.observing import samples, served


async def test_a_message_its_files_notes_answered_counts_as_done_not_failed(tmp_path) -> None:
    # Each file a user sent that could not be taken (too large, a download that failed, a platform that
    # takes none) counted as a failed turn, which alerts on failed turns fire on, and its span read as a crash.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    chat = RecordingAdapter()  # downloads nothing: the note "I can't receive files" is the whole answer
    host = AgentHost(make_config(tmp_path), model=ScriptedModel({"parent": [[{"text": "unused"}]]}))
    gateway = Gateway(host, [chat], tracer_provider=provider)
    await gateway.start()
    try:
        async with served(gateway) as server:
            await chat.say("", attachments=[Attachment("document", "report.pdf", "application/pdf", 10, "f1")])
            await settled(gateway)
            async with aiohttp.ClientSession() as http, http.get(f"{server.url}/metrics") as response:
                value = samples(await response.text())
    finally:
        await gateway.stop(grace=0)
    assert chat.texts() == ["I can't receive files on chat."]
    assert value("switchboard_turns_total", platform="chat", kind="message", outcome="done") == 1
    assert value("switchboard_turns_total", platform="chat", kind="message", outcome="failed") == 0
    [turn] = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent switchboard"]
    assert turn.attributes["switchboard.turn.outcome"] == "done"
    assert "error.type" not in turn.attributes and turn.status.status_code is not StatusCode.ERROR
