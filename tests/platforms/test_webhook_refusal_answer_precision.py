"""A final refusal's answer, quoted in the log, masks the deliver_url's secrets and no more. A path segment or query
name merely holding a credential's letters (``signals``: sig, ``oauth``: auth, ``monkey``: key) made the word after it
a credential, masked wherever the answer said it ("incoming messages need a text field" read "*** messages …"); a
user name in the URL masked its path of words everywhere ("/xml" read "***ml"); a mask cut inside a word of the
answer, its rest a clue to what was masked ("***ed" of a key ``open``). A name that is a credential (``api_key``,
``password``, ``basicauth``: some read as tokens and were not taken for names) still masks what follows it, and a
token glued to other text is still masked. A segment of 12 characters or more is masked as a token itself."""

from __future__ import annotations

import string

import pytest
from aiohttp import web
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from platforms.base import NotFound, Outbound
from platforms.webhook import Route, WebhookAdapter
from tests.platforms.test_webhook_adapter import serve
from tests.platforms.test_webhook_refusal_answer_words import NOW, SECRET, quoted


@pytest.mark.parametrize("url", [
    "https://receiver.example/signals/incoming",
    "https://receiver.example/oauth/incoming",
    "https://receiver.example/OAuth/incoming",
    "https://receiver.example/monkey/incoming",
    "https://receiver.example/keys/incoming",
    "https://receiver.example/passthrough/incoming",
    "https://receiver.example/compass/incoming",
    "https://receiver.example/hooks?signals=incoming",
    "https://receiver.example/hooks?monkey=incoming&oauth=callback",
])
def test_a_name_holding_a_credentials_letters_masks_no_word_after_it(url: str) -> None:
    body = "incoming messages need a text field; callback unset"
    assert quoted(url, body) == body


@pytest.mark.parametrize("url", [
    *(f"https://receiver.example/{name}/relay/in" for name in [
        "key", "apikey", "api_key", "api-key", "apiKey", "X-Api-Key", "key2", "token", "accessToken", "SASToken",
        "secret", "app_secret", "sig", "signature", "hmacSig", "HMAC_SIG", "sig-256", "password", "passwd", "passcode",
        "pwd", "auth", "basicauth", "credentials", "secretkey", "passkey", "MonKey", "APIKEY", "secretvalue", "tokens",
        "auth_code", "authcode"]),
    *(f"https://receiver.example/hooks?{name}=relay" for name in [
        "sig", "sign", "api_key", "apikey", "X-Amz-Signature", "X-Amz-Credential", "accessToken", "auth", "pass",
        "user_pwd", "hook%5Fsecret", "passwort", "oauth_token"]),
])
def test_a_name_that_is_a_credential_masks_the_word_after_it(url: str) -> None:
    said = quoted(url, "unknown relay; relay=x")
    assert "relay" not in said, said


def test_the_path_of_a_url_with_a_user_name_is_no_secret() -> None:
    assert quoted("https://bob@receiver.example/x", "send /xml at /x, not json") == "send /xml at /x, not json"
    body = "no route /hooks/in?room=ops; see /hooks/in"
    assert quoted("https://relay:hunter22@receiver.example/hooks/in?room=ops", body) == body


@pytest.mark.parametrize(("url", "said", "kept"), [
    # The URL with its user info stays masked, however written.
    ("https://bob@receiver.example/x", "refused https://bob@receiver.example/x", "refused ***"),
    ("https://relay:hunter22@receiver.example/hooks/in", "refused https://relay:hunter22@receiver.example/hooks/in",
     "refused ***"),
    ("https://relay:hunter22@receiver.example/hooks/in",
     "refused https%3A%2F%2Frelay%3Ahunter22%40receiver.example%2Fhooks%2Fin", "refused ***"),
    # A path holding a secret part is still masked, and the URL without its user info that holds it.
    ("https://bob@receiver.example/hooks/ab3k", "no hook /hooks/ab3k", "no hook ***"),
    ("https://bob@receiver.example/hooks/ab3k", "no hook https://receiver.example/hooks/ab3k", "no hook ***"),
    ("https://bob@eo1a.receiver.example/x", "no hook https://eo1a.receiver.example/x", "no hook ***"),
])
def test_a_url_with_user_info_is_masked_whole_and_its_secret_parts(url: str, said: str, kept: str) -> None:
    assert quoted(url, said) == kept


@pytest.mark.parametrize(("url", "said", "kept"), [
    # A credential reading as a word, inside a longer one: its rest told what it was.
    ("https://receiver.example/hooks?key=open", "the door reopened; key open", "the door ***; key ***"),
    # A token glued to other text is masked with it.
    ("https://receiver.example/h/abcdEFGHijkl1234", "no hook Xabcdefghijkl1234Y", "no hook ***"),
    ("https://receiver.example/h/abcdEFGHijkl1234", "no hook /h/abcdEFGHijkl1234x", "no hook ***"),
    ("https://hooks.zapier.com/hooks/catch/1234567/3abc9de", "no zap at /hooks/catch/1234567/3abc9dez",
     "no zap at ***"),
])
def test_a_mask_takes_the_word_it_is_glued_to(url: str, said: str, kept: str) -> None:
    assert quoted(url, said) == kept


async def test_the_log_quotes_a_user_urls_path_of_words_as_said() -> None:
    body = '{"error": "incoming messages need a text field", "path": "/signals/incoming"}'

    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=422, text=body)

    runner, url = await serve(web.post("/signals/incoming", refuse))
    adapter = WebhookAdapter({"hook": Route(SECRET, url.replace("//", "//relay@") + "/signals/incoming")},
                             clock=lambda: NOW)
    try:
        with pytest.raises(NotFound) as info:
            await adapter.send(Outbound("hook:ops", None, "done", idempotency_key="t1:reply:0", turn_id="t1"))
    finally:
        await adapter.stop()
        await runner.cleanup()
    assert str(info.value).endswith(f"not sent again; its answer: {body}"), str(info.value)


_WORDS = ["incoming", "messages", "need", "text", "field", "callback", "hooks", "format", "json", "ops"]
_TOKENS = st.text(alphabet=string.ascii_letters + string.digits, min_size=12, max_size=30)
_GLUE = st.text(alphabet=string.ascii_letters + string.digits, max_size=4)


@settings(max_examples=300, deadline=None)
@given(token=_TOKENS, credential=st.text(alphabet=string.ascii_lowercase, min_size=4, max_size=7),
       words=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6), at=st.integers(0, 6),
       glue=st.tuples(_GLUE, _GLUE, _GLUE, _GLUE), user=st.booleans())
def test_secrets_glued_to_text_are_masked_whole_words_and_other_words_kept(
        token: str, credential: str, words: list[str], at: int, glue: tuple[str, str, str, str], user: bool) -> None:
    assume(not any(credential in w or w in credential for w in _WORDS))
    url = f"https://{'relay@' if user else ''}receiver.example/hooks/{token}?sig={credential}"
    a, b, c, d = glue
    said = words[:at] + [f"{a}{token}{b}", f"{c}{credential}{d}"] + words[at:]
    shown = quoted(url, " ".join(said))
    assert shown == " ".join(words[:at] + ["***", "***"] + words[at:]), shown
