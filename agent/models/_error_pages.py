"""Web pages a model server's address answers an error with, where its API answers in JSON: the page of a
firewall in front of the provider (Cloudflare, CloudFront) refusing the network or country a request came from,
or of a proxy or API gateway in front of a self-hosted server (nginx, Traefik, an OAuth proxy) refusing its key.
What a page says is read from its title and its text, never quoted as HTML."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

_READ = 32_000
"""Characters of a page read: a block page says what it is near its top, and a page of megabytes must not
cost the event loop more than that."""

# A title is found by two searches, each once through the page: one pattern for both sought a closing from
# every opening, and a page of openings alone (4,500 on 32,000 characters) held the event loop for 8 s.
_TITLE_OPENS = re.compile(r"<title\b[^<>]*>", re.IGNORECASE)
_TITLE_CLOSES = re.compile(r"</title\s*>", re.IGNORECASE)
# Unclosed, either runs to the end of the page: a page of openings alone is read once, not once for each.
_UNSEEN = re.compile(r"<(head|script|style)\b.*?(?:</\1\s*>|$)|<!--.*?(?:-->|$)", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[!/?a-z][^>]*(?:>|$)", re.IGNORECASE)

_REFUSES_THE_NETWORK = re.compile(
    r"you have been blocked|attention required! \| cloudflare|used cloudflare to restrict access"
    r"|\berror(?: code)?:? 10(?:0[5-9]|1[0-2]|20)\b|banned the country|banned your ip"
    r"|request blocked|block access from your country", re.IGNORECASE)
"""How a firewall's page says it refuses where a request came from, which no key cures: Cloudflare's WAF
("Attention Required! | Cloudflare", "Sorry, you have been blocked"), its "Access denied | … used Cloudflare to
restrict access" pages, and their codes (1005–1012 an IP, network or country banned, 1020 a firewall rule; to an
API client often only ``error code: 1020``, as plain text), CloudFront's "Request blocked." and "configured to
block access from your country". Not Cloudflare's ``cf-ray`` header nor its name alone: every answer that passes
through Cloudflare carries them, a self-hosted server's own refusal of a key (behind a tunnel) too."""


def is_web_page(body: object) -> bool:
    """An error body that is an HTML page, not an API's words."""
    return isinstance(body, str) and body.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))


def page_text(page: str) -> tuple[str, str]:
    """``page``'s title and its visible text (without its head, scripts and styles), tags stripped, entities
    decoded, each on one line; either may be empty."""
    page = page[:_READ]
    opens = _TITLE_OPENS.search(page)
    closes = opens and _TITLE_CLOSES.search(page, opens.end())
    return _line(page[opens.end():closes.start()] if closes else ""), _line(_UNSEEN.sub(" ", page))


def refuses_the_network(body: object, headers: Mapping[str, str]) -> bool:
    """Whether a 403 with ``body`` and ``headers`` is a firewall's in front of the provider refusing the network
    or country the request came from (`_REFUSES_THE_NETWORK`), or a browser check no API client passes
    (Cloudflare's ``cf-mitigated: challenge``); not any page: a proxy refuses a wrong or missing key with one too."""
    if headers.get("cf-mitigated") == "challenge":
        return True
    if not isinstance(body, str):
        return False
    words = " ".join(page_text(body)) if is_web_page(body) else body[:_READ]
    return _REFUSES_THE_NETWORK.search(words) is not None


def _line(markup: str) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", markup)).split())
