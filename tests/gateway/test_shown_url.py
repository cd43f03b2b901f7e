"""`gateway.config.secret_values.shown_url`: one way to show a model URL, on the terminal's first
screen and in the start-up check's line, so neither shows what the other hides."""

from __future__ import annotations

import pytest

from agent.settings import ModelSettings
from gateway.chat_intro import chat_intro
from gateway.config.secret_values import shown_url
from gateway.errors import StartupError
from gateway.preflight import check_model
from gateway.testing import make_config


@pytest.mark.parametrize(("url", "shown"), [
    ("http://alice:pw-s3cret@host/v1", "http://host/v1"),
    ("https://sk-s3cret-tok3n@proxy.example/v1", "https://proxy.example/v1"),
    ("https://host/v1?api_key=s3cret", "https://host/v1?api_key=***"),
    ("https://host/v1?key=s3cret&other=1", "https://host/v1?key=***&other=1"),
    ("https://host/v1?API-Key=s3cret", "https://host/v1?API-Key=***"),
    ("https://host/v1?api%5Fkey=s3cret", "https://host/v1?api%5Fkey=***"),  # the name as the server reads it
    ("https://host/v1#section", "https://host/v1#section"),
    ("https://host/v1#access_token=s3cret&state=2", "https://host/v1#access_token=***&state=2"),
    ("https://host/v1?org=7#sig=s3cret", "https://host/v1?org=7#sig=***"),
    ("http://u:s3cret@[::1]:8080/v1?token=s3cret", "http://[::1]:8080/v1?token=***"),
    ("http://[fe80::1%25eth0]:8080/v1", "http://[fe80::1%25eth0]:8080/v1"),
    ("user:s3cret@host:7233", "host:7233"),
    ("sk-s3cret@proxy/v1", "proxy/v1"),
    ("localhost:11434/v1", "localhost:11434/v1"),
    ("//u:s3cret@host/v1", "//host/v1"),
    ("http://host:1/v1?email=a@b.example", "http://host:1/v1?email=a@b.example"),
    ("http://host/v1%20x", "http://host/v1%20x"),  # as written, not re-encoded: it can be found in the file
    ("http://[::1", "http://[::1"),  # no parser takes it; still shown
    ("", ""),
])
def test_a_url_is_shown_without_user_info_nor_credential_parameters(url, shown):
    assert shown_url(url) == shown


@pytest.mark.parametrize("url", [
    "http://u:pa/ss-s3cret@host/v1", "http://u:pa?ss-s3cret@host/v1", "http://u:pa#ss-s3cret@host/v1"])
def test_a_password_with_an_unencoded_delimiter_goes_whole(url):
    # A parser ends the authority at the delimiter and reads a port that is no number ("pa"): by its
    # reading there is no user info, and the rest of the password showed as the path, query or fragment.
    assert shown_url(url) == "http://host/v1"


def test_the_first_screen_and_the_start_up_check_hide_the_same(tmp_path):
    url = "https://alice:pw-s3cret@proxy.example/v1?api-key=k3y-s3cret#access_token=t0k-s3cret"
    intro = chat_intro(make_config(tmp_path, model={"provider": "openai", "name": "m", "base_url": url}))
    assert f"openai model m at {shown_url(url)}" in intro
    assert "s3cret" not in intro and "alice" not in intro


async def test_an_unusable_base_url_is_named_without_a_password_that_holds_a_slash():
    # $OPENAI_BASE_URL is read by no configuration rule: the start-up check is the first to name it.
    url = "http://user:pa/ss-s3cret@127.0.0.1:1/v1"
    with pytest.raises(StartupError) as info:
        await check_model(ModelSettings(provider="openai"), env={"OPENAI_BASE_URL": url})
    assert str(info.value).startswith("$OPENAI_BASE_URL: http://127.0.0.1:1/v1 is not a usable URL ("), info.value
    assert "s3cret" not in str(info.value)


async def test_an_unreachable_base_url_is_named_without_a_credential_in_its_fragment(unused_tcp_port):
    url = f"http://127.0.0.1:{unused_tcp_port}/v1#access_token=t0k-s3cret"
    with pytest.raises(StartupError) as info:
        await check_model(ModelSettings(provider="openai", base_url=url, timeout_seconds=2))
    assert str(info.value).startswith(
        f"model.base_url: cannot reach http://127.0.0.1:{unused_tcp_port}/v1#access_token=*** ("), info.value
