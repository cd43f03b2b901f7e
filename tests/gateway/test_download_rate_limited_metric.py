"""A file download Slack answers 429 shows in /metrics' switchboard_platform_rate_limited_total."""

from __future__ import annotations

from gateway.testing import make_config, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.gateway.observing import samples


async def test_a_rate_limited_download_is_in_the_metric(tmp_path) -> None:
    async with FakeSlack() as fake:
        config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        gateway = await start_gateway(config, [adapter], script={"parent": [[{"text": "got it"}]]})
        try:
            fake.fail_next("files.info", status=429, retry_after=0.05)
            await fake.push_file("DU1", "U1", b"a,b\n", "data.csv", mimetype="text/csv", text="read it")
            await fake.wait_for(lambda: "got it" in fake.texts("DU1"), timeout=10)
            value = samples(gateway.metrics.exposition().decode())
        finally:
            await gateway.stop(grace=0)
    assert len(fake.calls_to("files.info")) == 2
    assert value("switchboard_platform_rate_limited_total", platform="slack") == 1
