"""The outbound proxy for a platform's URL: the one the environment names, as for the model's requests.

The model's HTTP client (httpx) and the start's model check (`gateway.preflight`) go through the proxy
``$https_proxy`` (for an https URL) or ``$http_proxy`` (for an http one) names, unless ``$no_proxy``
exempts the host; the names in capitals too, the lower-case ones first (`urllib.request.getproxies`).
``$no_proxy`` is read by urllib's `proxy_bypass` (``*``, names with their subdomains, addresses), and an
address range in it (``10.0.0.0/8``) as httpx and curl read one (`_in_exempt_range`).
Each adapter passes `proxy_for` its URLs' choice to its SDK, REST and WebSocket alike: none of them
reads the environment so (aiogram and discord.py not at all; slack-sdk takes ``$HTTPS_PROXY`` for every
URL, ``$no_proxy`` unread). A WebSocket goes as the HTTP request that opens it: ``wss`` as ``https``.

The value returned may hold the proxy's user and password: the SDKs send them as ``Proxy-Authorization``;
it is never to be logged, nor is aiohttp's text of a proxy's refusal, which quotes it (`proxy_refusal`).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp

_AS_HTTP = {"ws": "http", "wss": "https"}


def proxy_for(url: str) -> str | None:
    """The proxy URL the environment names for ``url``, or None: none named for its scheme, or
    ``$no_proxy`` exempts its host. A proxy written without a scheme (``proxy:3128``) is an http one,
    as httpx and curl take it."""
    parts = urlsplit(url)
    proxies = getproxies()
    proxy = proxies.get(_AS_HTTP.get(parts.scheme, parts.scheme))
    if not proxy or not parts.hostname or proxy_bypass(parts.hostname):
        return None
    if _in_exempt_range(parts.hostname, proxies.get("no", "")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _in_exempt_range(host: str, no_proxy: str) -> bool:
    """Whether ``host`` is an address in a range ``no_proxy`` names: urllib compares the text alone, and
    an internal server the model reached directly (httpx reads ranges) went to the egress proxy."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: `proxy_bypass` has read it
    for entry in no_proxy.split(","):
        try:
            if "/" in entry and address in ipaddress.ip_network(entry.strip(), strict=False):
                return True
        except ValueError:  # no range: urllib's to read, or no one's
            continue
    return False


def proxy_refusal(exc: BaseException | None) -> str | None:
    """What a proxy's refusal of a tunnel (``CONNECT``, for an https or wss URL) says: its status and reason
    (a 407 for the wrong password, a 403 of its policy, a 502 for a host it cannot reach), not its address,
    which aiohttp's text of it quotes with the user and password. None for any other error."""
    if not isinstance(exc, aiohttp.ClientHttpProxyError):
        return None
    return f"the proxy $https_proxy or $http_proxy names refused the connection: {exc.status} {exc.message}"
