"""OpenAIModel refused with a web page where the API answers in JSON: a firewall's, which refuses the network or
country the gateway runs from (`blocked`: no key cures it), or a proxy's in front of a self-hosted server, which
refuses a wrong or missing key (`auth`). Either is told by its title and a short excerpt of its text, never its
HTML, and never a secret it echoes. The real SDK over loopback sockets."""

from __future__ import annotations

import time

import pytest

from agent import ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

KEY = "sk-test-very-secret-0123456789"
HELLO = ModelRequest(messages=[{"role": "user", "content": "hello"}])
NGINX = ("<html>\r\n<head><title>403 Forbidden</title></head>\r\n<body>\r\n<center><h1>403 Forbidden</h1></center>"
         "\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n")
OAUTH_PROXY = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Forbidden</title>"
               "<style>body { font-family: sans-serif }</style></head><body><section><h1>403 Forbidden</h1>"
               "<p>Invalid authentication via OAuth2: unable to verify the bearer token</p>"
               "<footer>Secured with OAuth2 Proxy</footer></section></body></html>")
CLOUDFLARE_WAF = ("<!DOCTYPE html>\n<html><head><title>Attention Required! | Cloudflare</title></head><body>"
                  "<h1>Sorry, you have been blocked</h1><p>You are unable to access api.example.com</p></body></html>")
CLOUDFLARE_COUNTRY = ("<!DOCTYPE html><html><head><title>Access denied | api.example.com used Cloudflare to restrict "
                      "access</title></head><body><h1><span>Error</span> <span>1009</span></h1><h2>Access denied</h2>"
                      "<p>The owner of this website (api.example.com) has banned the country or region your IP "
                      "address is in (XX) from accessing this website.</p></body></html>")
CLOUDFRONT_COUNTRY = ("<HTML><HEAD><TITLE>ERROR: The request could not be satisfied</TITLE></HEAD><BODY><H1>403 ERROR"
                      "</H1><H2>The request could not be satisfied.</H2><HR noshade size=\"1px\">The Amazon CloudFront "
                      "distribution is configured to block access from your country.</BODY></HTML>")
CHALLENGE = ("<!DOCTYPE html><html><head><title>Just a moment...</title></head><body><noscript>Enable JavaScript "
             "and cookies to continue</noscript></body></html>")


async def refused(status: int, body: str, headers: dict[str, str] | None = None) -> tuple[ModelError, str]:
    async with FakeOpenAIServer(api_key=KEY) as server:
        server.push_error(status, body, {"content-type": "text/html", **(headers or {})})
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key=KEY,
                                          max_retries=0), env={})
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(HELLO)
        finally:
            await model.aclose()
    return caught.value, server.base_url


@pytest.mark.parametrize(("body", "headers", "title"), [
    (NGINX, None, "403 Forbidden"),
    # Behind a Cloudflare tunnel: every answer carries cf-ray, the proxy's refusal of a key too.
    (OAUTH_PROXY, {"cf-ray": "8a1b2c3d4e5f6a7b-AMS", "server": "cloudflare"}, "Forbidden"),
], ids=["nginx", "oauth-proxy-behind-cloudflare"])
async def test_a_proxys_web_page_refusing_the_key_is_the_keys_fault_not_the_network(body, headers, title):
    # Any 403 page was `blocked`: the operator of a self-hosted model was told to change networks when the key
    # their proxy expects was wrong or missing.
    error, base_url = await refused(403, body, headers)
    assert error.kind == "auth" and error.status == 403
    assert f"a web page titled '{title}': " in str(error)
    assert "refused the key" in str(error) and f"(model 'm' at {base_url})" in str(error)


@pytest.mark.parametrize(("body", "headers"), [
    (CLOUDFLARE_WAF, None),
    (CLOUDFLARE_COUNTRY, None),
    ("error code: 1020", None),  # what Cloudflare's firewall rule answers a client that asked for no page
    (CLOUDFRONT_COUNTRY, None),
    (CHALLENGE, {"cf-mitigated": "challenge"}),
], ids=["cloudflare-waf", "cloudflare-country", "cloudflare-1020-plain", "cloudfront-country", "challenge"])
async def test_a_page_that_says_it_refuses_the_network_is_blocked(body, headers):
    error, base_url = await refused(403, body, headers)
    assert error.kind == "blocked" and error.status == 403
    assert f"(model 'm' at {base_url})" in str(error) and "refused the key" not in str(error)


async def test_a_web_page_is_quoted_by_its_title_and_a_short_excerpt_of_its_text():
    # The log quoted up to 1,000 characters of HTML: head, scripts and styles, with the page's words far behind.
    page = ("<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title><style>" + "p{x:y}" * 200
            + "</style><script>var k = 1;</script></head><body><!-- a comment --><h1>Sorry, you have been "
            "blocked</h1><p>You are unable to access &lt;api.example.com&gt; with key " + KEY + "</p>"
            + "<p>more words</p>" * 300 + "</body></html>")
    error, _ = await refused(403, page)
    text = str(error)
    assert error.kind == "blocked"
    assert ("a web page titled 'Attention Required! | Cloudflare': Sorry, you have been blocked You are unable to "
            "access <api.example.com> with key [redacted] more words") in text
    assert "<h1>" not in text and "p{x:y}" not in text and "var k" not in text and "comment" not in text
    assert KEY not in text and len(text) < 500


async def test_a_key_a_server_echoes_where_its_words_are_cut_is_not_half_kept():
    # The words were cut at 1,000 characters before the key was masked: a key cut in two was matched by no mask.
    error, _ = await refused(401, "x" * 990 + " " + KEY)
    assert error.kind == "auth"
    assert KEY[:8] not in str(error)


@pytest.mark.parametrize("page", [
    "<html><body><p>Invalid key sk-test-very<b>-secret-0123456789</b></p></body></html>",
    "<html><body><p>Invalid key <span>sk-</span><span>test-very-secret-0123456789</span></p></body></html>",
    "<html><body><p>Invalid key sk-test-<wbr>very-&#115;ecret-<wbr>0123456789</p></body></html>",
    "<html><head><title>Invalid key sk-test-<i>very</i>-secret-0123456789</title></head><body>x</body></html>",
], ids=["bold", "spans", "wbr-and-entity", "title"])
async def test_a_key_the_pages_tags_split_is_masked_in_the_words_quoted(page):
    # The page was masked before its tags were stripped, each of which became a space: the key, split by them in
    # the page, was quoted whole but for a space ("sk-test-very -secret-0123456789").
    error, _ = await refused(403, page)
    assert error.kind == "auth" and "[redacted]" in str(error)
    assert KEY[:12] not in str(error) and KEY[-12:] not in str(error)


@pytest.mark.parametrize("mark", ["&shy;", "&#8203;", "&zwj;", "&#x2060;"], ids=["soft-hyphen", "zero-width-space",
                                                                              "zero-width-joiner", "word-joiner"])
async def test_a_key_a_page_breaks_with_an_invisible_mark_is_masked(mark):
    # A page that lets a long word wrap breaks it with a soft hyphen or a zero-width space, which are no whitespace:
    # the key was quoted with the mark in it, which no reader of the log sees.
    page = f"<html><body><p>Invalid key sk-test-very{mark}-secret-{mark}0123456789</p></body></html>"
    error, _ = await refused(403, page)
    assert "[redacted]" in str(error)
    assert KEY[:12] not in str(error) and KEY[-10:] not in str(error)


@pytest.mark.parametrize("page", ["<!DOCTYPE html>" + "<title>" * 4600, "<html>" + "<title>x</title " * 2000],
                         ids=["openings", "closings-unended"])
async def test_a_page_crafted_of_title_openings_costs_the_event_loop_little(page):
    # One pattern sought a title's closing from every opening: 8 s of the event loop for each of the two reads
    # of a 403's page (what it says, its title quoted), every other chat waiting.
    started = time.process_time()  # CPU: the fake server's and the SDK's work count too, a few milliseconds
    error, _ = await refused(403, page)
    assert time.process_time() - started < 1.0
    assert error.kind == "auth" and "a web page" in str(error)
