"""Fixtures for the gateway store's tests: a store on a temporary file, with a fake clock."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.store import GatewayStore, NewMessage
from platforms.base import Inbound


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path, clock):
    s = GatewayStore(tmp_path / "state.db", clock=clock)
    yield s
    s.close()


def event(event_id: str, text: str = "hi", platform: str = "telegram") -> Inbound:
    return Inbound(platform=platform, chat_id="c1", thread_id=None, user_id="u1", user_name="Ann", text=text,
                   event_id=event_id, is_command=text.startswith("/"), reply_token="tok")


def msg(key: str, text: str = "hello", **kw) -> NewMessage:
    where = (kw.pop("platform", "telegram"), kw.pop("chat_id", "c1"), kw.pop("thread_id", None))
    return NewMessage(key, *where, text, **kw)
