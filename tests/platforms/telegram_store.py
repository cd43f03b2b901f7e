"""A webhook-mode `TelegramAdapter` bound to the gateway's real store, as the gateway binds it, for tests of the edits
it keeps there: the store as a fixture, `bind`, and `process`, one gateway process's adapter."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.store import GatewayStore
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.telegram_webhook import webhook_adapter


def gateway_store() -> Any:
    """A ``store`` fixture for a test module (``store = gateway_store()``): a `GatewayStore` in the test's
    ``tmp_path``, closed after the test."""

    @pytest.fixture
    def store(tmp_path: Path) -> Iterator[GatewayStore]:
        store = GatewayStore(tmp_path / "state.db")
        yield store
        store.close()

    return store


async def unused(platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
    return False  # as the gateway answers an edit of a message it has not been handed


def bind(adapter: TelegramAdapter, store: GatewayStore, record: Any = None, edits: Any = unused) -> None:
    """``record``: in place of the store's own recording of what the adapter keeps; ``edits``: where the edits of
    messages handed over go."""
    adapter.bind_last_seen(store.last_seen.of("telegram"),
                           record or functools.partial(store.last_seen.record, "telegram"),
                           functools.partial(store.last_seen.at, "telegram"))
    adapter.bind_edits(edits)


@contextlib.asynccontextmanager
async def process(fake: FakeTelegram, store: GatewayStore, sink: Sink | None = None, record: Any = None,
                  edits: Any = unused) -> AsyncIterator[Sink]:
    """One gateway process's webhook adapter, `bind`-ed to the store; stopped at the end."""
    async with webhook_adapter(fake, sink) as (adapter, sink):
        bind(adapter, store, record, edits)
        yield sink
