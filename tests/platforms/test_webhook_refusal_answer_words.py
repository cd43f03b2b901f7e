"""A final refusal's answer, quoted in the log, masks the deliver_url's secrets, not its words: a path of words
(``/hooks/webhooks``) and each word of it, eight letters or more, read ``***`` wherever the answer said them, which
left the operator an answer with holes where it named what was wrong. A token in the path (Slack's, Discord's), a
credential in the query or the user info, a token as a host's label, and whatever follows a segment naming a key
still never show, nor does the path or URL holding them."""

from __future__ import annotations

import asyncio
import string

import pytest
from aiohttp import web
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from platforms.base import NotFound, Outbound
from platforms.webhook import Route, WebhookAdapter, _answer
from tests.platforms.test_webhook_adapter import serve

SECRET = "answer-words-secret-0123456789"
NOW = 1_700_000_000.0


class _Content:
    def __init__(self, body: bytes) -> None:
        self.body = body

    async def read(self, n: int) -> bytes:
        chunk, self.body = self.body[:n], self.body[n:]
        return chunk


class _Answer:
    def __init__(self, body: str) -> None:
        self.content = _Content(body.encode())


def quoted(url: str, body: str) -> str:
    return asyncio.run(_answer(_Answer(body), Route(SECRET, url))).removeprefix("; its answer: ")


async def test_a_path_of_words_and_its_words_are_quoted_as_the_receiver_said_them() -> None:
    body = '{"error": "webhooks take one message each", "path": "/hooks/webhooks", "source": "switchboard"}'

    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=422, text=body)

    runner, url = await serve(web.post("/hooks/webhooks", refuse))
    adapter = WebhookAdapter({"hook": Route(SECRET, f"{url}/hooks/webhooks?source=switchboard")}, clock=lambda: NOW)
    try:
        with pytest.raises(NotFound) as info:
            await adapter.send(Outbound("hook:ops", None, "done", idempotency_key="t1:reply:0", turn_id="t1"))
    finally:
        await adapter.stop()
        await runner.cleanup()
    assert str(info.value).endswith(f"not sent again; its answer: {body}")


@pytest.mark.parametrize("url", [
    "https://receiver.example/AlertHook/alert-relay/notices",
    "https://receiver.example/api/v2/hooks/deliveries?room=ops-alerts&format=json",
])
def test_words_of_any_case_and_a_short_version_are_no_secret(url: str) -> None:
    body = f"refused {url} at /hooks/AlertHook: ops-alerts format deliveries"
    assert quoted(url, body) == body


@pytest.mark.parametrize(("url", "said", "kept"), [
    # Slack: the workspace's and the hook's ids, then its token.
    ("https://hooks.slack.com/services/T0ABCDEFG/B0HIJKLMN/abcdEFGHijklMNOPqrstUVWX",
     "invalid_token abcdEFGHijklMNOPqrstUVWX for /services/T0ABCDEFG/B0HIJKLMN/abcdEFGHijklMNOPqrstUVWX",
     "invalid_token *** for ***"),
    ("https://receiver.example/services/T000/B000/XXXXXXXX", "no hook XXXXXXXX at /services/T000/B000/XXXXXXXX",
     "no hook *** at ***"),
    # Discord: the hook's id, then its token; the path's words stay.
    ("https://discord.com/api/webhooks/123456789012345678/aBcDeF-gHiJkL_mNoPqRsTuVwXyZ0123456789",
     "Unknown Webhook aBcDeF-gHiJkL_mNoPqRsTuVwXyZ0123456789 (123456789012345678), see webhooks docs",
     "Unknown Webhook *** (***), see webhooks docs"),
    # A credential in the query or the user info, though it reads as a word.
    ("https://receiver.example/hooks/in?token=supersecret", "bad token supersecret at /hooks/in?token=supersecret",
     "bad token *** at ***"),
    ("https://relay:swordfish@receiver.example/hooks", "password swordfish refused for relay",
     "password *** refused for relay"),
    ("https://tokenalone@receiver.example/hooks", "unknown user tokenalone", "unknown user ***"),
    # What follows a segment naming a key (IFTTT's /with/key/<key>).
    ("https://maker.example/trigger/alert/with/key/opensesame", "key opensesame unknown for alert",
     "key *** unknown for alert"),
    # A token as the host's first label (a request bin's own host).
    ("https://eo1a2b3c4d5e6f7.m.pipedream.net/", "no endpoint eo1a2b3c4d5e6f7.m.pipedream.net",
     "no endpoint ***.m.pipedream.net"),
    # A part of eight to eleven letters reading as a word, not one of the common ones a URL is made of: a token may.
    ("https://receiver.example/catch/swordfishes", "no hook swordfishes at /catch/swordfishes", "no hook *** at ***"),
    ("https://receiver.example/hooks/OpenDoor", "no hook OpenDoor", "no hook ***"),
    # A letters-only part of twelve or more is taken for a token, however it reads.
    ("https://receiver.example/h/abababababab/x", "no hook abababababab", "no hook ***"),
])
def test_the_urls_secrets_are_masked(url: str, said: str, kept: str) -> None:
    assert quoted(url, said) == kept


_WORD_SEGMENTS = ["webhooks", "deliveries", "switchboard", "AlertHook", "ops-alerts", "incoming", "hooks", "api"]
_TOKENS = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=12, max_size=40)
_CREDENTIALS = st.text(alphabet=string.ascii_letters, min_size=4, max_size=20)


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.sampled_from(_WORD_SEGMENTS), min_size=1, max_size=4),
       tokens=st.lists(_TOKENS, max_size=2), credential=st.none() | _CREDENTIALS, shuffle=st.randoms())
def test_words_are_quoted_and_tokens_and_credentials_never(words: list[str], tokens: list[str],
                                                           credential: str | None, shuffle) -> None:
    secrets = [*tokens, *([credential] if credential else [])]
    # A word inside a secret, or one inside a word, is masked with it: not what this tells.
    assume(not any(w.lower() in s.lower() or s.lower() in w.lower() for w in words for s in secrets))
    segments = [*words, *tokens]
    shuffle.shuffle(segments)
    url = "https://receiver.example/" + "/".join(segments) + (f"?sig={credential}" if credential else "")
    said = quoted(url, " ".join([*segments, *secrets, url.removeprefix("https://receiver.example")]))
    assert all(s.lower() not in said.lower() for s in secrets), said
    assert all(f"{w} " in said for w in words), said


@pytest.mark.parametrize("userinfo", ["relay:swordfish", "sk_live_abcd", "relay:pass%2Fword"])
async def test_the_basic_authorization_the_urls_user_info_sends_is_masked_when_echoed(userinfo: str) -> None:
    # aiohttp sends a URL's user info as `Authorization: Basic base64(user:password)`: a receiver quoting the header
    # it refused quoted the password (or the token riding as the user name) in a form no plain match finds.
    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=422, text=f"unsupported Authorization: {request.headers.get('Authorization')}")

    runner, url = await serve(web.post("/hooks", refuse))
    adapter = WebhookAdapter({"hook": Route(SECRET, url.replace("//", f"//{userinfo}@") + "/hooks")},
                             clock=lambda: NOW)
    try:
        with pytest.raises(NotFound) as info:
            await adapter.send(Outbound("hook:ops", None, "done", idempotency_key="t1:reply:0", turn_id="t1"))
    finally:
        await adapter.stop()
        await runner.cleanup()
    assert str(info.value).endswith("its answer: unsupported Authorization: Basic ***"), str(info.value)


@pytest.mark.parametrize(("url", "said"), [
    # Zapier's hook: two ids of seven characters, neither a secret alone, the path holding both one.
    ("https://hooks.zapier.com/hooks/catch/1234567/3abc9de/", "no zap at %2Fhooks%2Fcatch%2F1234567%2F3abc9de%2F"),
    ("https://hooks.zapier.com/hooks/catch/1234567/3abc9de/",
     r'{"path": "\u002fhooks\u002fcatch\u002f1234567\u002f3abc9de\u002f"}'),
    ("https://hooks.zapier.com/hooks/catch/1234567/3abc9de/",
     "bad callback url=https%3A%2F%2Fhooks.zapier.com%2Fhooks%2Fcatch%2F1234567%2F3abc9de%2F"),
    # A token with a `+`, echoed by .NET's JSON (which writes it \u002B) or Go's (& as \u0026).
    ("https://receiver.example/hooks/in?token=Zm9v%2BYmFyYmF6cXV4", r'{"error": "bad token Zm9v\u002BYmFyYmF6cXV4"}'),
    ("https://receiver.example/hooks?room=ops&id=ab3k", r'{"error": "no hook for room=ops\u0026id=ab3k"}'),
])
def test_an_echo_escaping_the_urls_punctuation_masks_it_as_written(url: str, said: str) -> None:
    shown = quoted(url, said)
    assert "3abc9de" not in shown and "YmFyYmF6cXV4" not in shown and "ab3k" not in shown, shown


_IDS = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=4, max_size=7).filter(
    lambda s: any(c.isdigit() for c in s))


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.sampled_from(_WORD_SEGMENTS), max_size=3), ids=st.lists(_IDS, min_size=1, max_size=3),
       tokens=st.lists(_TOKENS, max_size=1), slash=st.sampled_from(["%2F", "%2f", "\\u002f", "\\u002F", "\\/"]),
       shuffle=st.randoms())
def test_a_path_holding_an_id_is_masked_however_its_slashes_are_escaped(
        words: list[str], ids: list[str], tokens: list[str], slash: str, shuffle) -> None:
    segments = [*words, *ids, *tokens]
    shuffle.shuffle(segments)
    path = "/" + "/".join(segments)
    echoed = path.replace("/", slash)
    said = quoted(f"https://hooks.receiver.example{path}", f"no hook at {echoed}")
    assert echoed.lower() not in said.lower() and all(t.lower() not in said.lower() for t in tokens), said
