"""`platforms.slack_names.Names`, the handles of the users Slack messages mention: one ``users.info`` per user in
flight, a message never waiting past the lookup's timeout (the answer kept for the next one), answers kept for a
while and no more than so many, deactivated and bot users named, an unknown id asked once, and a refusal of the
method ending the lookups with one warning. slack-sdk's client, through the adapter's `WebApi`, against the
loopback FakeSlack."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import aiohttp
import pytest

from agent.testing import FakeClock
from platforms.fakes.slack import FakeSlack
from platforms.slack_calls import WebApi
from platforms.slack_client import SlackWebClient
from platforms.slack_connection import BotToken
from platforms.slack_names import KEEP_SECONDS, Names
from tests.platforms.slack_client import fake_slack

fake = fake_slack()

ALICE, BOB = "U0ALICE", "U0BOB"
SCOPES = {"x-oauth-scopes": "chat:write,users:read"}


@pytest.fixture
async def web(fake: FakeSlack) -> AsyncIterator[WebApi]:
    async with aiohttp.ClientSession() as session:
        client = SlackWebClient(token=fake.bot_token, base_url=fake.api_base, session=session, retry_handlers=[])
        yield WebApi(lambda: client, BotToken(), lambda: None)


class Lookups:
    """The background the adapter gives `Names`: its tasks, which a test awaits."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Future[None]] = []

    def __call__(self, work: Awaitable[None]) -> asyncio.Future[None]:
        self.tasks.append(asyncio.ensure_future(work))
        return self.tasks[-1]


def names_of(web: WebApi, headers: dict[str, str] | None = SCOPES, **kw: Any) -> Names:
    names = Names(lambda user: web.call("users.info", None, user=user, caller_logs=True), **kw)
    names.start(headers, ("UBOT", "switchboard"))
    return names


def looked_up(fake: FakeSlack) -> list[str]:
    return [call.params.get("user") for call in fake.calls if call.method == "users.info"]


async def test_users_asked_for_at_once_are_looked_up_once_each(fake: FakeSlack, web: WebApi) -> None:
    fake.add_user(ALICE, "alice")
    names, held = names_of(web), fake.hold("users.info")
    first = asyncio.ensure_future(names.of([ALICE, "UBOT"]))
    second = asyncio.ensure_future(names.of([ALICE]))
    await fake.wait_for(lambda: looked_up(fake))
    held.set()
    assert await first == {ALICE: "alice", "UBOT": "switchboard"}
    assert await second == {ALICE: "alice"}
    assert looked_up(fake) == [ALICE]


async def test_a_lookup_slack_is_slow_to_answer_is_not_waited_for_but_kept(fake: FakeSlack, web: WebApi,
                                                                         caplog) -> None:
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    fake.add_user(ALICE, "alice")
    lookups, held = Lookups(), fake.hold("users.info")
    names = names_of(web, background=lookups, timeout=0.05)
    assert await names.of([ALICE]) == {}  # the message goes on with the id
    held.set()
    await asyncio.gather(*lookups.tasks)
    assert await names.of([ALICE]) == {ALICE: "alice"}  # the next one has the answer
    assert looked_up(fake) == [ALICE]
    (line,) = [r.getMessage() for r in caplog.records]
    assert "did not answer users.info within" in line and "reach the model as ids" in line


async def test_a_handle_is_kept_for_a_while_and_so_many_at_most(fake: FakeSlack, web: WebApi) -> None:
    for user, name in ((ALICE, "alice"), (BOB, "bob")):
        fake.add_user(user, name)
    clock = FakeClock(autojump=False)
    names = names_of(web, monotonic=clock.monotonic, remembered=1)
    assert await names.of([ALICE]) == {ALICE: "alice"}
    clock.advance(KEEP_SECONDS - 1)
    assert await names.of([ALICE]) == {ALICE: "alice"}
    assert looked_up(fake) == [ALICE]
    clock.advance(1)
    fake.users[ALICE]["name"] = "alice.liddell"  # an admin renamed her
    assert await names.of([ALICE]) == {ALICE: "alice.liddell"}
    assert await names.of([BOB]) == {BOB: "bob"}  # one handle kept: bob's pushes hers out
    assert await names.of([ALICE]) == {ALICE: "alice.liddell"}
    assert looked_up(fake) == [ALICE, ALICE, BOB, ALICE]


async def test_deactivated_and_bot_users_are_named_and_an_unknown_id_is_asked_once(fake: FakeSlack,
                                                                                 web: WebApi) -> None:
    fake.add_user(ALICE, "alice", deleted=True)
    fake.add_user("U0CI", "deploybot", is_bot=True)
    names = names_of(web)
    assert await names.of([ALICE, "U0CI", "U0GONE"]) == {ALICE: "alice", "U0CI": "deploybot"}
    assert await names.of(["U0GONE"]) == {}
    assert sorted(looked_up(fake)) == sorted([ALICE, "U0CI", "U0GONE"])


@pytest.mark.parametrize("headers", [None, {"x-oauth-scopes": "bot"}], ids=["no header", "a classic app"])
async def test_scopes_not_listed_are_tried_and_a_refusal_ends_the_lookups(fake: FakeSlack, web: WebApi, caplog,
                                                                         headers: dict[str, str] | None) -> None:
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    fake.add_user(ALICE, "alice")
    fake.fail_next("users.info", "missing_scope")
    names = names_of(web, headers)
    assert await names.of([ALICE]) == {}
    assert await names.of([ALICE]) == {}
    assert looked_up(fake) == [ALICE]
    (line,) = [r.getMessage() for r in caplog.records]
    assert "missing_scope" in line and "users:read" in line


async def test_without_the_scope_listed_nothing_is_asked(fake: FakeSlack, web: WebApi) -> None:
    fake.add_user(ALICE, "alice")
    names = names_of(web, {"x-oauth-scopes": "chat:write,files:read"})
    assert await names.of([ALICE, "UBOT"]) == {"UBOT": "switchboard"}
    assert looked_up(fake) == []


async def test_a_refusal_of_one_user_keeps_the_lookups_on_for_the_others(fake: FakeSlack, web: WebApi) -> None:
    # An org-wide app not granted one user's workspace: that user stays an id, the next is named.
    fake.add_user(ALICE, "alice")
    fake.add_user("U0BOB", "bob")
    fake.fail_next("users.info", "team_access_not_granted")
    names = names_of(web, {"x-oauth-scopes": "chat:write,users:read"})
    assert await names.of([ALICE]) == {}
    assert await names.of(["U0BOB"]) == {"U0BOB": "bob"}
