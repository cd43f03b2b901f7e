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


@pytest.mark.parametrize("path", ["webhooks/111/{token}/messages/@original", "interactions/222/{token}/callback"])
def test_an_interaction_token_in_a_failures_text_is_masked(
    path: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An interaction's token (good for 15 minutes of answers as the bot) sits in its webhook's URL, which
    aiohttp puts in some errors' text: never in the log, nor in the error the outbox keeps and shows."""
    monkeypatch.setattr(discord_errors, "_SHARED", RepeatedWarnings(discord_errors.log))
    caplog.set_level(logging.WARNING, logger=discord_errors.log.name)
    token = "aW50ZXJhY3Rpb246MTIzNDU2Nzg5MDEyMzQ1Njc4OTA6c2VjcmV0LXRva2Vu"
    url = f"https://127.0.0.1:9/api/v10/{path.format(token=token)}"  # an API URL as aiohttp words it; never asked
    failures = [aiohttp.ConnectionTimeoutError(f"Connection timeout to host {url}"),  # as aiohttp words it
                aiohttp.InvalidURL(url), ValueError(f"unexpected answer from {url}")]
    for exc in failures:
        error = discord_errors.translate(exc, route="PATCH /webhooks/{application_id}/{token}/messages/{message_id}",
                                         chat_id="701")
        assert token not in str(error) and path.format(token="***") in str(error)
    assert caplog.records and all(token not in r.getMessage() for r in caplog.records)
