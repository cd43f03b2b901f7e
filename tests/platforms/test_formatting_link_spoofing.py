"""Links Slack would open somewhere the reader did not see: a masked link whose label is another web
address, as a page the model quotes may hold one (Slack shows only a link's label, so
``<https://evil.example|https://bank.example>`` would show the bank's address and open the other), and a
link to a scheme other than the web's or mail's, which Slack hands to whatever opens it (a file share,
an editor). Such a label goes followed by the address; such a target is written out."""

from __future__ import annotations

import pytest

from platforms.formatting import slack_mrkdwn


@pytest.mark.parametrize(("markdown", "expected"), [
    ("[https://bank.example/login](https://evil.example/x)",
     "https://bank.example/login (<https://evil.example/x>)"),
    ("Sign in at [HTTP://bank.example](https://evil.example).",
     "Sign in at HTTP://bank.example (<https://evil.example>)."),
    # A reference link is the same link.
    ("[https://bank.example][r]\n\n[r]: https://evil.example", "https://bank.example (<https://evil.example>)"),
])
def test_a_label_that_is_another_address_is_followed_by_the_links_own(markdown, expected):
    assert slack_mrkdwn.render(markdown) == expected


@pytest.mark.parametrize(("markdown", "expected"), [
    # The link's own address, written as markdown-it does not write it: a trailing slash, another case,
    # a host in its own script (markdown-it links it as punycode).
    ("[https://x.org](https://x.org/)", "<https://x.org/|https://x.org>"),
    ("[HTTPS://X.ORG/](https://x.org)", "<https://x.org|HTTPS://X.ORG/>"),
    ("[https://Москва.ru](https://Москва.ru)", "<https://xn--o0a4bf5ats.ru|https://Москва.ru>"),
    ("<https://Москва.ru/a>", "<https://xn--o0a4bf5ats.ru/a|https://Москва.ru/a>"),
    # Words are a label, whatever they name.
    ("[the bank](https://bank.example)", "<https://bank.example|the bank>"),
    ("[mirror of https://y.org](https://x.org)", "<https://x.org|mirror of https://y.org>"),
])
def test_a_label_that_is_the_links_own_address_or_words_stays_the_label(markdown, expected):
    assert slack_mrkdwn.render(markdown) == expected


@pytest.mark.parametrize(("markdown", "expected"), [
    # Slack linked every scheme markdown-it lets through: a click opened a file share, an editor, a dialer.
    ("[the report](smb://files.example/share/q3.xlsx)", "the report (smb://files.example/share/q3.xlsx)"),
    ("[docs](vscode://file/etc/passwd)", "docs (vscode://file/etc/passwd)"),
    ("[call us](tel:+15551234)", "call us (tel:+15551234)"),
    ("<irc://irc.example/chan>", "irc://irc.example/chan"),
    ("![chart](smb://files.example/c.png)", "chart (smb://files.example/c.png)"),
])
def test_only_web_and_mail_addresses_are_linked(markdown, expected):
    assert slack_mrkdwn.render(markdown) == expected


@pytest.mark.parametrize(("markdown", "expected"), [
    ("[the docs](https://x.org/d)", "<https://x.org/d|the docs>"),
    ("[mail us](MAILTO:help@example.com)", "<MAILTO:help@example.com|mail us>"),
    ("<help@example.com>", "<mailto:help@example.com|help@example.com>"),
    ("see [a](/relative)", "see a (/relative)"),
])
def test_web_and_mail_links_stay_links(markdown, expected):
    assert slack_mrkdwn.render(markdown) == expected
