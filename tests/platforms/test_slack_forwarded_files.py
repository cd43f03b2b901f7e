"""Files forwarded on Slack: a message shared from another conversation lists its files under the shared
message in ``attachments``, never in the forwarding message's ``files``; they arrive all the same."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.fakes._slack_files import SharedFile
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack

fake = fake_slack()


@pytest.fixture
async def started(fake: FakeSlack) -> AsyncIterator[tuple[SlackAdapter, Sink]]:
    adapter, sink = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                                 ping_interval=0.2, max_attachment_bytes=1000), Sink()
    await adapter.start(sink)
    yield adapter, sink
    await adapter.stop()


async def test_a_forwarded_messages_file_arrives_and_downloads(fake: FakeSlack, started) -> None:
    # Read from ``files`` alone, a file forwarded with a message never reached the model, and the user, who
    # forwarded it to ask about it, was answered as if nothing came with the words.
    adapter, sink = started
    shared = SharedFile("F09999999", "minutes.txt", "text/plain", b"we agreed on Tuesday")
    fake.files[shared.id] = shared
    forwarded = fake.shared_message("C9", "U2", "", author="Ann", channel_name="team")
    forwarded["files"] = [fake.file_object(shared)]
    await fake.push_message(fake.dm_channel("U1"), "U1", "what did we agree?", channel_type="im",
                            attachments=[forwarded])
    await fake.wait_for(lambda: sink.inbound)
    inbound = sink.inbound.pop()
    assert inbound.text == "what did we agree?"
    (file,) = inbound.attachments
    assert (file.kind, file.name, file.mime_type) == ("document", "minutes.txt", "text/plain")
    assert await adapter.download(file) == b"we agreed on Tuesday"
