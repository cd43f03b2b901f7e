"""The line a platform's failed start stops the gateway with shows its ``api_base`` as
`gateway.config.secret_values.shown_url` does: a proxy's credentials in the URL's user info (a
password, or a token given as the user name alone) are neither printed nor logged."""

from __future__ import annotations

import socket

import pytest

from gateway.config import config_from_mapping
from gateway.startup_errors import explain
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

USER_TOKEN = "proxytoken0123456789abcdef"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def line_for(exc: BaseException, token: str, api_base: str) -> str:
    config = config_from_mapping({"platforms": {"telegram": {
        "enabled": True, "token": token, "api_base": api_base, "allow_all": True}}}).config
    return explain(exc, config)


@pytest.mark.parametrize("userinfo", [f"{USER_TOKEN}@", f"user:{USER_TOKEN}@"])
async def test_an_unreachable_api_base_is_named_without_its_user_info(userinfo):
    api_base = f"http://{userinfo}127.0.0.1:{closed_port()}"
    adapter = TelegramAdapter("123456:TEST-token", api_base=api_base)
    with pytest.raises(Exception) as failed:
        await adapter.start(Sink())
    line = line_for(failed.value, "123456:TEST-token", api_base)
    assert line.startswith("platforms.telegram.api_base: no working Telegram Bot API at http://127.0.0.1:"), line
    assert USER_TOKEN not in line


async def test_a_refused_bot_is_named_without_the_api_base_user_info():
    async with FakeTelegram() as fake:
        api_base = fake.base_url.replace("://", f"://{USER_TOKEN}@", 1)
        adapter = TelegramAdapter("999:wrong-token", api_base=api_base)
        with pytest.raises(Exception) as refused:
            await adapter.start(Sink())
    line = line_for(refused.value, "999:wrong-token", api_base)
    assert line.startswith("platforms.telegram: http://127.0.0.1:") and "refused the bot" in line, line
    assert USER_TOKEN not in line


class NetworkError(Exception):
    """Shaped as the adapters' translated errors are: the platform it is of, the SDK's words."""

    platform = "telegram"


@pytest.mark.parametrize("userinfo, secret", [(f"{USER_TOKEN}@", USER_TOKEN), (f"proxy:{USER_TOKEN}@", USER_TOKEN),
                                              ("proxy:p%40ss%2Fword9@", "p@ss/word9")])
def test_user_info_the_sdk_echoes_is_not_repeated(userinfo, secret):
    api_base = f"http://{userinfo}127.0.0.1:9/tg"
    echoed = NetworkError(f"cannot reach {api_base}/bot123:abc/getMe as {secret} ({userinfo.rstrip('@')})")
    line = line_for(echoed, "123456:TEST-token", api_base)
    assert secret not in line and userinfo.split(":")[-1].rstrip("@") not in line, line
    assert "http://127.0.0.1:9/tg" in line
