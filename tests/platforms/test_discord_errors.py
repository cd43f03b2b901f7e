"""How the Discord adapter logs the failures it translates (`platforms.discord_errors`)."""

from __future__ import annotations

import logging

import aiohttp
import pytest

from platforms import discord_errors
from platforms.base import BadRequest, NetworkError
from platforms.repeated_warnings import RepeatedWarnings

ROUTE = "POST /channels/{channel_id}/messages"


def test_a_failure_every_channel_shares_is_warned_of_once_a_channels_own_every_time(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Discord unreachable: every channel's retries fail alike, and one warning says so, not one per call."""
    monkeypatch.setattr(discord_errors, "_SHARED", RepeatedWarnings(discord_errors.log))
    caplog.set_level(logging.WARNING, logger=discord_errors.log.name)
    for channel in ("701", "702", "703"):
        error = discord_errors.translate(aiohttp.ClientConnectionError("Connection reset by peer"),
                                         route=ROUTE, chat_id=channel)
        assert isinstance(error, NetworkError)
    for channel in ("704", "705"):
        assert isinstance(discord_errors.translate(ValueError("embed too large"), route=ROUTE, chat_id=channel),
                          BadRequest)
    warned = [r.getMessage().split(" failed")[0] for r in caplog.records]
    assert warned == [f"discord: {ROUTE} for channel {c}" for c in ("701", "704", "705")]
