"""A link whose label only looks like another address: look-alike letters (a Cyrillic һ or а, a Greek ο, a dotless ı),
fullwidth forms (``ｈｔｔｐｓ：／／``), a host of Cyrillic letters that reads as a Latin one (``аррӏе.com``), or an
address written without its scheme (``bank.example/login``). Slack shows a link's label alone, Discord masks a
label with no ``https://`` in it, Telegram shows the label and the address only on a tap: each showed
``һttps://bank.example/login`` and opened evil.example. Such a label is followed by the address the link opens."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from platforms.base import Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.telegram import TelegramAdapter

SPOOFS = [
    ("һttps://bank.example/login", "https://evil.example/x"),  # Cyrillic һ
    ("https://bаnk.example", "https://evil.example"),  # Cyrillic а in the host
    ("ｈｔｔｐｓ：／／bank.example", "https://evil.example"),  # fullwidth
    ("https：／／bank．example", "https://evil.example"),
    ("https://bank\u3002example", "https://evil.example"),  # an ideographic full stop
    ("https\u2236\u2215\u2215bank.example", "https://evil.example"),  # a ratio sign, division slashes
    ("https://bank.examplе/lοgin", "https://evil.example"),  # Cyrillic е, Greek ο
    ("HTTPS://ВАNК.EXAMPLE", "https://evil.example"),  # Cyrillic capitals
    ("bank.example/logın", "https://evil.example"),  # no scheme, a dotless ı
    ("bank.example/login", "https://evil.example"),
    ("www.bank.example", "https://evil.example"),
    ("paypal.com", "https://evil.example"),
    ("раураl.com", "https://evil.example"),  # all Cyrillic but the l
]


def _slack(label: str, href: str) -> str:
    return f"{label} (<{href}>)"


@pytest.mark.parametrize(("label", "href"), SPOOFS)
def test_a_label_looking_like_another_address_is_followed_by_the_links_own(label: str, href: str) -> None:
    markdown = f"Sign in at [{label}]({href})."
    assert slack_mrkdwn.render(markdown) == f"Sign in at {_slack(label, href)}."
    assert discord_markdown.render(markdown) == f"Sign in at {label} (<{href}>)."
    assert telegram_html.render(markdown) == f'Sign in at {html.escape(label)} (<a href="{href}">{href}</a>).'


@pytest.mark.parametrize("label", ["https://аррӏе.com", "аррӏе.com", "https://аррӏе.com/"])
def test_a_cyrillic_host_reading_as_a_latin_one_is_followed_by_its_punycode(label: str) -> None:
    # Its own address, and a browser would show it as xn--80ak6aa92e.com: the reader reads apple.com.
    markdown = f"[{label}](https://аррӏе.com)"
    assert slack_mrkdwn.render(markdown) == f"{label} (<https://xn--80ak6aa92e.com>)"
    assert discord_markdown.render(markdown) == f"{label} (<https://xn--80ak6aa92e.com>)"
    assert telegram_html.render(markdown) == (
        f'{label} (<a href="https://xn--80ak6aa92e.com">https://xn--80ak6aa92e.com</a>)')


@pytest.mark.parametrize(("markdown", "slack", "telegram"), [
    # A host in its own script, some of its letters like Latin ones: read as that script, and it is the link's own.
    ("[https://Москва.ru](https://Москва.ru)", "<https://xn--o0a4bf5ats.ru|https://Москва.ru>",
     '<a href="https://xn--o0a4bf5ats.ru">https://Москва.ru</a>'),
    ("[пример.рф](https://пример.рф/)", "<https://xn--e1afmkfd.xn--p1ai/|пример.рф>",
     '<a href="https://xn--e1afmkfd.xn--p1ai/">пример.рф</a>'),
    # The link's own address in fullwidth forms.
    ("[ｈｔｔｐｓ：／／x.org](https://x.org)", "<https://x.org|ｈｔｔｐｓ：／／x.org>",
     '<a href="https://x.org">ｈｔｔｐｓ：／／x.org</a>'),
    # A host alone names its site, www. or not.
    ("[python.org](https://www.python.org/about)", "<https://www.python.org/about|python.org>",
     '<a href="https://www.python.org/about">python.org</a>'),
    # A file's name is no address, nor are words, Greek or Cyrillic ones included.
    ("[setup.py](https://github.com/o/r/blob/main/setup.py)", "<https://github.com/o/r/blob/main/setup.py|setup.py>",
     '<a href="https://github.com/o/r/blob/main/setup.py">setup.py</a>'),
    ("[the bаnk](https://bank.example)", "<https://bank.example|the bаnk>",
     '<a href="https://bank.example">the bаnk</a>'),
    ("[Οδηγός](https://x.org/el)", "<https://x.org/el|Οδηγός>", '<a href="https://x.org/el">Οδηγός</a>'),
])
def test_a_label_reading_as_the_links_own_address_or_as_words_stays_a_link(
        markdown: str, slack: str, telegram: str) -> None:
    assert slack_mrkdwn.render(markdown) == slack
    assert telegram_html.render(markdown) == telegram


def test_discord_masks_a_file_name_or_a_host_alone_pointing_at_its_site() -> None:
    assert discord_markdown.render("[setup.py](https://x.org/setup.py)") == "[setup.py](https://x.org/setup.py)"
    assert discord_markdown.render("[python.org](https://python.org/a)") == "[python.org](https://python.org/a)"


LOOK_ALIKES = {"a": "аα", "c": "сϲ", "e": "е", "h": "һ", "i": "іıι", "j": "јϳ", "l": "ӏ", "o": "оοօ", "p": "рρ",
               "s": "ѕ", "x": "х", "y": "у"}


@settings(max_examples=300, deadline=None)
@given(host=st.text(alphabet="".join(LOOK_ALIKES), min_size=1, max_size=12),
       tld=st.sampled_from(["com", "org", "example"]), scheme=st.booleans(), data=st.data())
def test_an_address_in_look_alike_letters_is_another_address(host: str, tld: str, scheme: bool, data) -> None:
    # Any of the address's letters in a look-alike, the rest ASCII: the label reads as that address, not another.
    disguised = "".join(data.draw(st.sampled_from([c, *LOOK_ALIKES[c]])) for c in host)
    label = f"{'https://' if scheme else ''}{disguised}.{tld}/"
    href = f"https://{host}.{tld}.evil.example/"
    markdown = f"[{label}]({href})"
    assert slack_mrkdwn.render(markdown) == f"{label} (<{href}>)"
    assert discord_markdown.render(markdown) == f"{label} (<{href}>)"
    assert telegram_html.render(markdown) == f'{label} (<a href="{href}">{href}</a>)'
    # Read as the address it looks like: a link to that address stays a link.
    own = f"https://{host}.{tld}/"
    if label != own:
        assert slack_mrkdwn.render(f"[{label}]({own})") == f"<{own}|{label}>"


async def test_telegram_shows_where_a_look_alike_label_goes() -> None:
    async with FakeTelegram() as tg:
        adapter = TelegramAdapter(tg.token, api_base=tg.base_url)
        try:
            await adapter.send(Outbound(chat_id="-1001", thread_id=None, text=(
                "Your account is locked: sign in at [һttps://bank.example/login](https://evil.example/x).")))
        finally:
            await adapter.stop()
    message = tg.messages["-1001"][-1]
    assert message["text"] == (
        "Your account is locked: sign in at һttps://bank.example/login (https://evil.example/x).")
    [link] = [e for e in message["entities"] if e["type"] == "text_link"]
    assert link["url"] == "https://evil.example/x"
    assert message["text"][link["offset"]:link["offset"] + link["length"]] == "https://evil.example/x"


# From review (R5): spoofs the look-alike table and the host pattern missed, and code the host pattern took for hosts.
@pytest.mark.parametrize(("label", "href"), [
    ("ᎻTTPS://bank.example", "https://evil.example"),  # Cherokee Ꮋ
    ("ꓧꓔꓔꓑꓢ://bank.example", "https://evil.example"),  # Lisu capitals
    ("bank.example,", "https://evil.example"),  # the sentence's comma
    ("paypal.com!", "https://evil.example"),
    ("192.168.0.1", "https://evil.example"),  # an IPv4 host
    ("10.0.0.1/admin", "https://evil.example"),
])
def test_a_label_in_cherokee_or_lisu_letters_with_a_mark_or_an_ip_is_another_address(label: str, href: str) -> None:
    markdown = f"[{label}]({href})"
    assert slack_mrkdwn.render(markdown) == _slack(label, href)
    assert discord_markdown.render(markdown) == f"{label} (<{href}>)"
    assert telegram_html.render(markdown) == f'{html.escape(label)} (<a href="{href}">{href}</a>)'


def test_a_cherokee_host_reading_as_a_latin_one_is_followed_by_its_punycode() -> None:
    # ᏴᎪNK.com reads BANK.com and opens xn--nk-s9lzs.com, the link's own address only in Unicode.
    assert slack_mrkdwn.render("[https://ᏴᎪNK.com](https://ᏴᎪNK.com)") == (
        "https://ᏴᎪNK.com (<https://xn--NK-s9lzs.com>)")
    assert telegram_html.render("[ᏴᎪNK.com](https://ᏴᎪNK.com)") == (
        'ᏴᎪNK.com (<a href="https://xn--NK-s9lzs.com">https://xn--NK-s9lzs.com</a>)')


@pytest.mark.parametrize(("label", "href"), [
    ("os.path.join", "https://docs.python.org/3/library/os.path.html#os.path.join"),
    ("re.sub", "https://docs.python.org/3/library/re.html#re.sub"),
    ("np.array", "https://numpy.org/doc/stable/reference/generated/numpy.array.html"),
    ("torch.nn.Module", "https://pytorch.org/docs/stable/generated/torch.nn.Module.html"),
    ("java.util.List", "https://docs.oracle.com/javase/8/docs/api/java/util/List.html"),
    ("Array.prototype.map", "https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Array/map"),
    ("App.vue", "https://github.com/o/r/blob/main/src/App.vue"),
    ("paypal.com,", "https://www.paypal.com/signin"),  # its own site, a comma after it
])
def test_a_label_naming_code_or_its_own_site_stays_a_link(label: str, href: str) -> None:
    assert slack_mrkdwn.render(f"[{label}]({href})") == f"<{href}|{label}>"
    assert discord_markdown.render(f"[{label}]({href})") == f"[{label}]({href})"
    assert telegram_html.render(f"[`{label}`]({href})") == f'<a href="{href}">{label}</a>'  # code in a link: text
