"""Who may use the web chat's API (and the operator console's): the token, the proxy's user
header, the allowlist, the Host.

Checks run in this order and stop at the first failure:

0. **Origin**: a request a browser marks with an ``Origin`` must come from the page's own
   origin (the ``Host``, or a proxy's ``X-Forwarded-Host``): another site's page cannot
   use a person's browser to talk to the agent. 403. (`platforms.web` also takes only
   ``application/json`` posts, which browsers never send cross-origin unasked.)
1. **Host** (only when the page is open without a token or a user header, i.e. on loopback): the
   ``Host`` header must name a loopback address (``localhost``, ``127.x.x.x``,
   ``[::1]``). A web page elsewhere cannot then reach this API by pointing its own
   domain name at 127.0.0.1 (DNS rebinding). Nor may a proxy's forwarding headers
   (``X-Forwarded-For``, ``X-Real-IP``, ``X-Forwarded-Host``, ``Forwarded``) name
   a client or host elsewhere: a reverse proxy on this machine that keeps the
   upstream ``Host`` (nginx's and Apache's default) would make the internet look
   local. And the connection must come from this machine: headers are the client's to
   write, and on a server listening on every address (``/metrics`` with
   ``server.console: false``) anyone could send ``Host: localhost``. Nor may it carry one of
   ``proxy_headers``, which only a proxy in front sets (the console is given the web chat's
   ``user_header``): a bare nginx ``proxy_pass`` keeps the upstream ``Host`` and names no client,
   and let everyone it signed in for the chat reach the console. 403.
2. **Token**: with ``token`` set, ``Authorization: Bearer <token>`` (compared in
   constant time). 401.
3. **User**: with ``user_header`` set, that header names the user (a proxy that signs
   people in sets it); missing, empty or given more than once is 401 (a proxy that adds its
   header after the client's, rather than replacing it, must not let the client's name win).
   With ``trusted_proxies`` too, the header is read only on a connection from one of them (the
   socket's peer, never an address a header names): a request from anywhere else is 401 as one
   without it, so a client that reaches the port around the proxy cannot name itself anyone.
   Without ``user_header``, every request is the one anonymous user ``web``.
4. **Allowlist**: with ``user_header`` set, the user must be in ``allowed_users``
   (case-insensitive, a leading ``@`` ignored) unless ``allow_all``. 403.

Neither the token nor the Authorization header is ever logged or echoed. A refusal is logged at
INFO once for its reason; those for the same reason in the next `WINDOW_SECONDS` (10 minutes) are
counted, and the first one after says how many (`platforms.repeated_warnings`): a scanner, or a
client retrying a stale token in a loop, writes a line per reason, not one per request.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from aiohttp import web
from multidict import MultiMapping

from platforms.base import has_surrogates
from platforms.repeated_warnings import WINDOW_SECONDS, RepeatedWarnings

log = logging.getLogger("platforms.web_access")

ANONYMOUS = "web"
LOOPBACK_ONLY = "this chat answers on localhost only; set platforms.web.token to serve other hosts"
_MAX_USER = 256


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    reason: str
    token: bool = False
    """The token is what was missing or wrong: the page should ask for it."""
    detail: str = ""
    """For the log only: what the refusal compared (a foreign Origin against the Host it was sent to)."""
    said: RepeatedWarnings | None = field(default=None, compare=False, repr=False)
    """The log of the `Access` that refused it, which says each reason once and counts its repeats."""


def refusal_response(request: web.Request, refusal: Refusal, *, realm: str, what: str) -> web.Response:
    """The JSON error for a refused request; a missing or wrong token asks for one (``realm``).
    Logged with ``what`` was asked (``web chat``, ``console``), never with the token, and with the
    path as sent: decoded, a stranger's ``%0A`` would start a line of their own in the log."""
    said = refusal.said or RepeatedWarnings(log, level=logging.INFO)
    said.warning((what, refusal.reason), "%s %s %s refused: %s%s", what, request.method, request.rel_url.raw_path,
                 refusal.reason, refusal.detail)
    response = error_response(refusal.status, refusal.reason)
    if refusal.token:
        response.headers["WWW-Authenticate"] = f'Bearer realm="{realm}"'
    return response


def error_response(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def proxy_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """The networks ``entries`` name (an address alone is a network of one); ValueError naming the first entry
    that is neither, with its index."""
    networks = []
    for i, entry in enumerate(entries):
        try:
            network = ipaddress.ip_network(str(entry).strip())
        except ValueError as exc:
            # A network written with its host's bits (10.0.0.5/24) would let in more or less than meant.
            network, why = None, " (its host bits are set)" if "host bits" in str(exc) else ""
        else:
            # A peer's address comes without its zone (`request.remote`), and `in` ignores one: fe80::1%eth0 let in
            # fe80::1 from every link.
            zone = getattr(network.network_address, "scope_id", None)
            why = f" (a zone such as %{zone} is not checked: give the address without it)" if zone else ""
        if network is None or why:
            raise ValueError(f"[{i}]: expected an IP address or network such as 10.0.0.5 or 10.0.0.0/24, got"
                             f" {str(entry)!r}{why}")
        networks.append(network)
    return tuple(networks)


def _peer_in(remote: str | None, networks: tuple[Network, ...]) -> bool:
    try:
        address = ipaddress.ip_address(remote or "")
    except ValueError:
        return False  # a Unix socket's peer has no address: no proxy named it
    # A socket listening on "::" names an IPv4 peer as ::ffff:10.0.0.5.
    address = getattr(address, "ipv4_mapped", None) or address
    return any(address in network for network in networks)


def stream_owner(user: str | None, remote: str | None) -> str:
    """Whose event stream a request opens, for the cap on each one's streams, in the log's words: the ``user``
    the proxy's header names, or without one (everyone is then `ANONYMOUS`) the address the connection comes
    from, the only thing that tells one client from another. An IPv6 host is given a whole network of 64 bits
    and picks its addresses in it at will: that network is one owner, or one client had a cap per address."""
    if user is not None:
        return f"user {user!r}"  # quoted: never the words of an address
    try:
        address = ipaddress.ip_address(remote or "")
    except ValueError:
        return "the client on a socket without an address"  # a Unix socket's peer
    address = getattr(address, "ipv4_mapped", None) or address
    if address.version == 6:
        return f"the client at {ipaddress.ip_network((address, 64), strict=False)}"
    return f"the client at {address}"


def is_loopback(host: str | None) -> bool:
    """Whether a listening address or a ``Host`` name (port and brackets allowed) is loopback only."""
    if not host:
        return False  # "" listens on every interface
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]  # host:port; a bare IPv6 address has several colons
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    # A socket listening on "::" names an IPv4 client as ::ffff:127.0.0.1, which Python 3.11 calls not loopback.
    return (getattr(address, "ipv4_mapped", None) or address).is_loopback


class Access:
    """The checks above for one adapter; `check` answers a request with its user or a `Refusal`.
    ``clock`` (monotonic seconds) times how long the log counts a reason's refusals."""

    def __init__(self, *, token: str | None = None, user_header: str | None = None,
                 allowed_users: Iterable[str | int] = (), allow_all: bool = False,
                 trusted_proxies: Iterable[str] = (), check_host: bool | None = None,
                 proxy_headers: Iterable[str] = (), loopback_only: str = LOOPBACK_ONLY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._token = token.encode() if token else None
        self.user_header = user_header or None
        self._proxies = proxy_networks(trusted_proxies)
        # Stripped as the header's name is: " alice" (an env file's stray space) would let alice in never.
        self._allowed = {str(u).strip().lstrip("@").lower() for u in allowed_users}
        self._allow_all = allow_all
        self._loopback_only = loopback_only
        # Without a token only the loopback Host stands between a hostile page and the agent.
        self._check_host = self._token is None and self.user_header is None if check_host is None else check_host
        self._proxy_headers = tuple(proxy_headers)
        # INFO, not WARNING: a page opened without its token is refused once, then asks for it; routine.
        self._refusals = RepeatedWarnings(log, window=WINDOW_SECONDS, clock=clock, level=logging.INFO)

    @property
    def needs_token(self) -> bool:
        return self._token is not None

    def check(self, request: web.Request) -> str | Refusal:
        answer = self._check(request)
        return replace(answer, said=self._refusals) if isinstance(answer, Refusal) else answer

    def _check(self, request: web.Request) -> str | Refusal:
        origin = request.headers.get("Origin")
        if origin is not None and not _same_origin(origin, request.headers):
            # A reverse proxy that rewrites Host (nginx's default) looks like this to every page it serves.
            hosts = request.headers.get("Host"), request.headers.get("X-Forwarded-Host")
            return Refusal(403, "requests from other sites' pages are not served",
                           detail=f" (Origin {origin!r}, Host {hosts[0]!r}, X-Forwarded-Host {hosts[1]!r})")
        if self._check_host and not (is_loopback(request.headers.get("Host")) and _not_forwarded(request.headers)
                                     and is_loopback(request.remote)):
            return Refusal(403, self._loopback_only)
        if self._check_host and (proxied := next((h for h in self._proxy_headers if h in request.headers), None)):
            return Refusal(403, self._loopback_only, detail=f" (its {proxied} header: sent through a proxy)")
        if self._token is not None:
            scheme, _, given = request.headers.get("Authorization", "").partition(" ")
            # A header's non-UTF-8 bytes arrive as lone surrogates: they make a wrong token, not an error.
            given_bytes = given.strip().encode("utf-8", "surrogateescape")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given_bytes, self._token):
                return Refusal(401, "missing or wrong token", token=True)
        if self.user_header is None:
            return ANONYMOUS
        if self._proxies and not _peer_in(request.remote, self._proxies):
            return Refusal(401, f"no user: the {self.user_header} header is read only from the signing-in proxy"
                           " (platforms.web.trusted_proxies)", detail=f" (from {request.remote})")
        named = request.headers.getall(self.user_header, ())
        if len(named) > 1:
            # A proxy that appends its header (HAProxy's add-header) leaves the client's first: the first would be
            # whoever the client claimed to be.
            return Refusal(401, f"the {self.user_header} header is given more than once")
        user = named[0].strip() if named else ""
        # Bytes that are not UTF-8 arrive as lone surrogates: no name, and no chat id the store could hold.
        if not user or len(user) > _MAX_USER or has_surrogates(user):
            return Refusal(401, f"no user in the {self.user_header} header")
        if not self._allow_all and user.lstrip("@").lower() not in self._allowed:
            return Refusal(403, f"user {user!r} is not allowed to use this chat")
        return user


def _not_forwarded(headers: MultiMapping[str]) -> bool:
    """Whether every client and host a proxy's headers name is this machine (or there are none).
    Anything unreadable (``unknown``, an obfuscated ``_name``) counts as elsewhere."""
    named = [a for h in ("X-Forwarded-For", "X-Real-IP", "X-Forwarded-Host") for a in headers.getall(h, ())]
    for value in headers.getall("Forwarded", ()):
        for element in value.split(","):
            for pair in element.split(";"):
                key, _, address = pair.partition("=")
                if key.strip().lower() in ("for", "host"):
                    named.append(address.strip().strip('"'))
    return all(is_loopback(part) for value in named for part in value.split(","))


def _same_origin(origin: str, headers: Mapping[str, str]) -> bool:
    """Whether ``origin`` (``scheme://host[:port]``) names the host this request was sent to."""
    scheme, sep, netloc = origin.strip().lower().partition("://")
    if not sep or scheme not in ("http", "https") or not netloc:
        return False  # "null" (sandboxed frames, files) and anything odd
    hosts = {headers.get("Host", ""), headers.get("X-Forwarded-Host", "").split(",")[0]}
    return netloc in {h.strip().lower() for h in hosts if h.strip()}
