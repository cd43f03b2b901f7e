"""A stop of `SlackAdapter` keeps to the time the gateway gives it (`stop_within`) while Slack does not
answer its last calls: the answers to commands it took but had not handed over. (Its placeholders'
deletions: `tests/scenarios/test_slack_stop.py`.)"""

from __future__ import annotations

import asyncio

from platforms.base import CommandSpec, Inbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.sqlite_errors import full_disk

GRACE = 1.0
SLACK = 1.5
"""Room for the last calls' floor (`platforms.base.LAST_CALLS_FLOOR`) on a loaded 2-core machine."""


async def test_a_stop_whose_answers_to_commands_not_taken_slack_does_not_take_keeps_to_its_grace() -> None:
    # Those answers had 3 s of their own, past the grace, when Slack was slow to take them.
    tries = 0

    async def refusing(inbound: Inbound) -> None:  # the store refuses it until the stop: not taken
        nonlocal tries
        tries += 1
        raise full_disk()

    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        await adapter.start(refusing, [CommandSpec("new", "New session")])
        answering = fake.hold("response_url")
        try:
            await fake.push_slash_command("/new", "U1", "DU1")
            await fake.wait_for(lambda: tries >= 1)
            loop = asyncio.get_running_loop()
            began = loop.time()
            await adapter.stop_within(GRACE)
            assert loop.time() - began < GRACE + SLACK
            assert fake.calls_to("response_url")  # tried, within the grace
        finally:
            answering.set()
            await adapter.stop()
