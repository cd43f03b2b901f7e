"""The secret values a configuration holds, found before it is validated.

Messages about the configuration must not echo a secret, also when the same
value was typed into a key that is not secret (a token pasted into
``server.port``): the validator needs every secret value up front, while the
tree is still raw. Walks the settings dataclasses by their ``secret`` field
metadata, so a new secret field is covered without touching this module.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints

MIN_LENGTH = 4
"""Shorter values are not treated as secrets in messages: masking them would mangle ordinary words."""
ENV_SECRETS = ("OPENAI_API_KEY",)
"""Variables a secret setting falls back to when it is unset (``model.api_key``, ``model.transcription.api_key``)."""
CREDENTIAL_NAMES = "token|key|secret|pass|pwd|sig|auth|credential"
"""What the name of a URL query parameter holding a credential contains (``?api-key=``, ``&sig=``)."""

# In a message a value is JSON-quoted and may be cut short with '…"' (`validate.show`): a password
# ends at "@" or at the cut, a value at its closing quote (an escaped \" inside it is part of it).
# A scheme is optional, as in a Temporal address (`user:password@host:7233`).
_MESSAGE_USERINFO = re.compile(
    r"""((?:\b[A-Za-z][A-Za-z0-9+.-]*://|(?<![^\s"'(]))[^\s/?#@:"']*:)((?:\\"|[^\s/?#@"])+)(?=@|…")""")
# A user name alone is a token (``https://tk-…@proxy/v1``), as `url_credentials` takes it. Only after a
# scheme: ``alice@example.com`` is an address. Cut short before any "@", an authority may be such a user
# name too (a long token): it goes as well, costing at most a long host name in a message cut anyway.
_MESSAGE_USER = re.compile(r"""(\b[A-Za-z][A-Za-z0-9+.-]*://)((?:\\"|[^\s/?#@:"'])+)(?=@|…")""")
# In the query or, as OAuth's implicit flow puts it, the fragment (``#access_token=…``).
_MESSAGE_QUERY_CREDENTIAL = re.compile(
    rf"""([?&#][^\s=&#"]*(?:{CREDENTIAL_NAMES})[^\s=&#"]*=)((?:\\"|[^\s&#"])+)""", re.IGNORECASE)


def secret_values(cls: type, raw: object) -> frozenset[str]:
    """Every string (or number) set on a ``secret`` field anywhere in ``raw``, read as ``cls``."""
    found: set[str] = set()
    _walk(cls, raw, found)
    return frozenset(value for value in found if len(value) >= MIN_LENGTH)


OTLP_HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
"""Headers the OpenTelemetry exporter sends the collector (``name=value,…``): a hosted one's API key."""
URL_VARIABLES = ("OPENAI_BASE_URL",)
"""A URL a setting falls back to when it is unset (``model.base_url``): its `url_credentials` (a proxy's
basic auth, a token as the user name, an ``?api-key=``) are secrets, as ones written into the setting are."""


def env_secret_values(env: Mapping[str, str]) -> frozenset[str]:
    """The values of the `ENV_SECRETS` that are set (the model sends them as its key when the file sets
    none), each header value of the `OTLP_HEADER_VARIABLES`, as set and URL-decoded as sent, and the
    `url_credentials` of each of the `URL_VARIABLES` and of each proxy the environment names (`proxy_urls`)."""
    found = {env.get(name) or "" for name in ENV_SECRETS}
    for url in [env.get(name) or "" for name in URL_VARIABLES] + proxy_urls(env):
        found |= url_credentials(url)
    for name in OTLP_HEADER_VARIABLES:
        for header in (env.get(name) or "").split(","):
            value = header.partition("=")[2].strip()
            found |= {value, urllib.parse.unquote(value)}
    return frozenset(value for value in found if len(value) >= MIN_LENGTH)


def proxy_urls(env: Mapping[str, str]) -> list[str]:
    """The proxies ``env`` names as `urllib.request.getproxies` reads them (``$https_proxy``, ``$HTTP_PROXY``,
    ``$all_proxy``: any ``*_proxy`` but ``$no_proxy``, either case), one without a scheme as ``http://``. The
    model's client and the platforms send their user and password (`platforms.proxies`), and SDKs log the URL
    (slack-sdk at DEBUG) or quote it in an error's text (aiohttp's of a proxy's refusal)."""
    named = [value for name, value in env.items()
             if value and name.lower().endswith("_proxy") and name.lower() != "no_proxy"]
    return [url if "://" in url else f"http://{url}" for url in named]


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?=//)")
_CREDENTIAL_NAME = re.compile(CREDENTIAL_NAMES, re.IGNORECASE)


def shown_url(url: str, replacement: str = "***") -> str:
    """``url`` as it may be shown where others read it (the terminal chat's first screen, a start-up
    error): without its user info, and with the value of each query or fragment parameter whose name
    holds a credential (`CREDENTIAL_NAMES`) replaced (``?api_key=***&org=7``, ``#access_token=***``).

    The user info goes whole, user name too: a token often rides as the user name alone
    (``https://sk-…@proxy/v1``). The rest stays as written, not re-encoded, so it can be found in the
    file it came from; a URL no parser accepts (``http://[::1``) is shown the same way. A password
    holding an unencoded ``/``, ``?`` or ``#`` ends the authority early for a parser, which then
    reads a port that is no number: what comes before its ``@`` goes too."""
    start, host_start, end = _split(url)
    rest, hash_mark, fragment = url[end:].partition("#")
    path, question_mark, query = rest.partition("?")
    return (url[:start] + url[host_start:end] + path + question_mark + _masked_parameters(query, replacement)
            + hash_mark + _masked_parameters(fragment, replacement))


def url_credentials(url: str) -> frozenset[str]:
    """What `shown_url` leaves out of ``url`` or masks in it, for log redaction: the password of its user
    info, or its user name when it stands alone (a token: ``https://tk-…@proxy/v1``), and the value of
    each query or fragment parameter named like a credential; each as written and percent-decoded (an
    HTTP client may log either, an SDK's error the decoded one). A user name beside a password is no
    secret (``alice``), nor is a value shorter than `MIN_LENGTH`: masked everywhere in the log, it would
    mangle ordinary words."""
    start, host_start, end = _split(url)
    user, colon, password = url[start:host_start - 1].partition(":") if host_start > start else ("", "", "")
    written = [password if colon else user]
    rest = url[end:].partition("#")
    for text in (rest[0].partition("?")[2], rest[2]):
        for part in text.split("&"):
            name, equals, value = part.partition("=")
            if equals and _CREDENTIAL_NAME.search(urllib.parse.unquote_plus(name)):
                written.append(value)
    found = {form for value in written
             for form in (value, urllib.parse.unquote(value), urllib.parse.unquote_plus(value))}
    return frozenset(value for value in found if len(value) >= MIN_LENGTH)


def _split(url: str) -> tuple[int, int, int]:
    """Where ``url``'s user info starts, where its host starts (past the user info's ``@``; the same
    index when there is none) and where its authority ends."""
    scheme = _SCHEME.match(url)
    start = scheme.end() + 2 if scheme else 2 if url.startswith("//") else 0
    end = _authority_end(url, start)
    userinfo_end = url.rfind("@", start, end)
    if userinfo_end < 0 and _bad_port(url[start:end]):
        userinfo_end = url.find("@", end)
        if userinfo_end >= 0:
            userinfo_end = url.rfind("@", start, _authority_end(url, userinfo_end))
    host_start = userinfo_end + 1 if userinfo_end >= 0 else start
    return start, host_start, _authority_end(url, host_start)


def _authority_end(url: str, start: int) -> int:
    ends = [i for i in (url.find(c, start) for c in "/?#") if i >= 0]
    return min(ends, default=len(url))


def _bad_port(authority: str) -> bool:
    """Whether ``authority`` (without user info) ends in a port that is no number: ``user:pa`` of
    ``user:pa/ss@host``, a password cut short at its ``/``."""
    if authority.startswith("["):  # an IPv6 address: its port follows the bracket
        authority = authority.partition("]")[2]
    _, colon, port = authority.partition(":")
    return bool(colon) and not port.isdigit()


def _masked_parameters(text: str, replacement: str) -> str:
    parts = text.split("&")
    for i, part in enumerate(parts):
        name, equals, _ = part.partition("=")
        if equals and _CREDENTIAL_NAME.search(urllib.parse.unquote_plus(name)):
            parts[i] = f"{name}={replacement}"
    return "&".join(parts)


def mask(messages: Iterable[str], secrets: frozenset[str], replacement: str = "***") -> list[str]:
    """``messages`` with every secret value replaced, longest first (so one inside another goes whole),
    and so, whatever the key that held the URL, what `shown_url` would not show of it: every password, a
    user name standing alone (a token), and each query or fragment parameter named like a credential. A
    user name beside a password stays (``user:***@``): it names an account, and where to look."""
    ordered = sorted(secrets, key=len, reverse=True)
    out = []
    for message in messages:
        for secret in ordered:
            message = message.replace(secret, replacement)
        for pattern in (_MESSAGE_USERINFO, _MESSAGE_USER, _MESSAGE_QUERY_CREDENTIAL):
            message = pattern.sub(lambda m: m.group(1) + replacement, message)
        out.append(message)
    return out


@functools.cache
def holds_secrets(tp: Any) -> bool:
    """Whether a value read as ``tp`` may hold a secret setting: a section with one (a platform's, the
    model's), or a mapping or list of such (webhook routes)."""
    for member in _members(tp):
        if dataclasses.is_dataclass(member):
            hints = get_type_hints(member)
            if any(f.metadata.get("secret") or holds_secrets(hints[f.name]) for f in dataclasses.fields(member)):
                return True
        elif get_origin(member) in (Mapping, dict, tuple) and any(holds_secrets(arg) for arg in get_args(member)):
            return True
    return False


def _walk(tp: Any, raw: object, found: set[str]) -> None:
    if not isinstance(raw, Mapping):
        return
    if dataclasses.is_dataclass(tp):
        hints = get_type_hints(tp)
        for f in dataclasses.fields(tp):
            if f.name not in raw:
                continue
            value = raw[f.name]
            if f.metadata.get("secret"):
                if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                    found.add(str(value))
            else:
                for member in _members(hints[f.name]):
                    _walk(member, value, found)
        return
    if get_origin(tp) in (Mapping, dict):
        args = get_args(tp)
        if len(args) == 2:
            for item in raw.values():
                for member in _members(args[1]):
                    _walk(member, item, found)


def _members(tp: Any) -> tuple[Any, ...]:
    """The types a value may be read as: the members of a union, else the type itself."""
    return get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
