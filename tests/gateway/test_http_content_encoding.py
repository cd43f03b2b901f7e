"""A body in a Content-Encoding the server does not decode is answered 415 in JSON, naming what to send instead,
on every route that reads a body (docs/platforms/webhook.md, docs/platforms/web.md). aiohttp answered brotli and
zstd with a 400 in plain text telling the client to install a Python package, and passed the others (``compress``,
``gzip, br``) to the routes still encoded. Over a real server on loopback, with a real client."""

from __future__ import annotations

import gzip
import json
import time
import zlib

import aiohttp
import pytest
from multidict import CIMultiDict

from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import make_config
from platforms.webhook_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

WEB_TOKEN = "web-token-0123456789-abcdef"
CONSOLE_TOKEN = "console-token-0123456789-abcdef"
SECRET = "hook-secret-0123456789-abcdef"
ROUTES = {"webhook": ("/webhooks/hook", {}),
          "web chat": ("/chat/api/messages", {"Authorization": f"Bearer {WEB_TOKEN}"}),
          "console": ("/console/api/turns/t1/stop", {"Authorization": f"Bearer {CONSOLE_TOKEN}"})}
BODY = json.dumps({"chat": "c", "key": "key-0001", "text": "hi"}).encode()


@pytest.fixture
async def server(tmp_path, gateways):
    config = make_config(tmp_path, server={"console_token": CONSOLE_TOKEN}, platforms={
        "web": {"enabled": True, "token": WEB_TOKEN},
        "webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}})
    served = Server(await gateways(config, build_adapters(config)), "127.0.0.1", 0)
    await served.start()
    yield served
    await served.stop()


def refusal(coding: str) -> dict[str, str]:
    return {"error": f"Content-Encoding {coding} is not supported; send the body as gzip, deflate or uncompressed"}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("coding", ["br", "zstd", "compress", "x-gzip", "gzip, br"])
async def test_a_body_in_an_encoding_not_taken_is_a_json_415(server, route, coding) -> None:
    path, auth = ROUTES[route]
    headers = {**auth, "Content-Type": "application/json", "Content-Encoding": coding}
    async with aiohttp.ClientSession() as http, http.post(server.url + path, data=BODY, headers=headers) as response:
        assert response.status == 415
        assert response.content_type == "application/json"
        assert response.headers["Accept-Encoding"] == "gzip, deflate"
        assert await response.json() == refusal(coding)


async def test_two_encodings_in_two_headers_are_refused_too(server) -> None:
    # aiohttp decodes by one header alone (its C parser the last, its Python one the first): decoded as gzip, the
    # body would reach the route still in brotli.
    async with aiohttp.ClientSession() as http:
        for first, second in (("gzip", "br"), ("br", "gzip")):
            headers = CIMultiDict([("Content-Type", "application/json"), ("Content-Encoding", first),
                                   ("Content-Encoding", second)])
            async with http.post(server.url + "/webhooks/hook", data=gzip.compress(BODY), headers=headers) as response:
                assert response.status == 415
                assert await response.json() in (refusal("br"), refusal(f"{first}, {second}"))


async def test_the_refusal_comes_before_the_path_is_looked_at(server) -> None:
    async with aiohttp.ClientSession() as http:
        for path in ("/webhooks/unknown", "/healthz", "/chat/api/nope"):
            async with http.post(server.url + path, data=BODY, headers={"Content-Encoding": "br"}) as response:
                assert (response.status, await response.json()) == (415, refusal("br")), path


async def test_an_encoding_too_long_to_repeat_is_not_repeated(server) -> None:
    async with aiohttp.ClientSession() as http, \
            http.post(server.url + "/webhooks/hook", data=BODY, headers={"Content-Encoding": "x" * 200}) as response:
        assert response.status == 415
        assert await response.json() == {
            "error": "this Content-Encoding is not supported; send the body as gzip, deflate or uncompressed"}


async def test_gzip_deflate_and_identity_bodies_are_still_read(server) -> None:
    stamp = str(int(time.time()))
    hook = {"Content-Type": "application/json", "Content-Encoding": "gzip", TIMESTAMP_HEADER: stamp,
            SIGNATURE_HEADER: sign(SECRET, stamp, BODY)}  # signed as it is before compression
    path, auth = ROUTES["web chat"]
    async with aiohttp.ClientSession() as http:
        async with http.post(server.url + "/webhooks/hook", data=gzip.compress(BODY), headers=hook) as response:
            assert response.status == 202, await response.text()
            assert (await response.json())["duplicate"] is False
        async with http.post(server.url + path, data=zlib.compress(BODY), headers={
                **auth, "Content-Type": "application/json", "Content-Encoding": "deflate"}) as response:
            assert response.status == 202, await response.text()
        path, auth = ROUTES["console"]
        async with http.post(server.url + path, data=b"{}", headers={
                **auth, "Content-Type": "application/json", "Content-Encoding": "identity"}) as response:
            assert response.status == 409  # read, and the turn is not running
        async with http.get(server.url + "/healthz", headers={"Content-Encoding": "compress"}) as response:
            assert response.status == 200  # no body to decode
