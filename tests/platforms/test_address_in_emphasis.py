"""A bare web address inside a style, through the real renderers: the markers closing a style opened before the
address end it, as they end any word (``**https://e.co/**を参照``, a model writing Japanese: the address took
``**を参照…`` into its link, a page that is not there, and the bold showed its asterisks). An address's own
``*``, ``_``, ``~`` and CJK letters stay in it where they close no style."""

from __future__ import annotations

import pytest

from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html


@pytest.mark.parametrize(
    ("markdown", "telegram", "slack", "discord"),
    [
        ("**https://e.co/**を参照してください", '<b><a href="https://e.co/">https://e.co/</a></b>を参照してください',
         "*<https://e.co/>*\u200bを参照してください", "**https://e.co/**を参照してください"),
        ("**https://ja.wikipedia.org/wiki/日本語**です",
         '<b><a href="https://ja.wikipedia.org/wiki/日本語">https://ja.wikipedia.org/wiki/日本語</a></b>です',
         "*<https://ja.wikipedia.org/wiki/日本語>*\u200bです", "**https://ja.wikipedia.org/wiki/日本語**です"),
        ("これは**https://e.co/p**を参照", 'これは<b><a href="https://e.co/p">https://e.co/p</a></b>を参照',
         "これは\u200b*<https://e.co/p>*\u200bを参照", "これは**https://e.co/p**を参照"),
        ("~~https://e.co/~~を参照", '<s><a href="https://e.co/">https://e.co/</a></s>を参照',
         "~<https://e.co/>~\u200bを参照", "~~https://e.co/~~を参照"),
        ("*https://e.co/*を参照", '<i><a href="https://e.co/">https://e.co/</a></i>を参照',
         "_<https://e.co/>_\u200bを参照", "*https://e.co/*を参照"),
        ("**https://e.co/x**-based", '<b><a href="https://e.co/x">https://e.co/x</a></b>-based',
         "*<https://e.co/x>*-based", "**https://e.co/x**-based"),
        ("__https://e.co/x__-based", '<b><a href="https://e.co/x">https://e.co/x</a></b>-based',
         "*<https://e.co/x>*-based", "**https://e.co/x**-based"),
        ("_https://e.co/x_-based", '<i><a href="https://e.co/x">https://e.co/x</a></i>-based',
         "_<https://e.co/x>_-based", "*https://e.co/x*-based"),
        ("**https://e.co/x**abc", '<b><a href="https://e.co/x">https://e.co/x</a></b>abc',
         "*<https://e.co/x>*\u200babc", "**https://e.co/x**abc"),
    ],
)
def test_the_markers_closing_a_style_around_an_address_end_it(markdown, telegram, slack, discord) -> None:
    assert telegram_html.render(markdown) == telegram
    assert slack_mrkdwn.render(markdown) == slack
    assert discord_markdown.render(markdown) == discord


@pytest.mark.parametrize(
    ("markdown", "address"),
    [
        # No style open: the markers are the address's.
        ("see https://e.co/a**b now", "https://e.co/a**b"),
        ("see https://ja.wikipedia.org/wiki/日本語 now", "https://ja.wikipedia.org/wiki/日本語"),
        ("see https://e.co/~user now", "https://e.co/~user"),
        ("see https://e.co/a_b_c now", "https://e.co/a_b_c"),
        # A style closed before the address.
        ("*a* https://e.co/x*y now", "https://e.co/x*y"),
        ("**a** https://e.co/x**y now", "https://e.co/x**y"),
        # Markers in it that close no style open: a ``_`` within a word, a single ``~``, a ``*`` the rule of 3
        # keeps from closing ``**`` (CommonMark's ``**a*b**`` is bold ``a*b``).
        ("_see https://e.co/a_b_c_", "https://e.co/a_b_c"),
        ("~~see https://e.co/~user~~", "https://e.co/~user"),
        ("**see https://e.co/a*b**", "https://e.co/a*b"),
        ("*see https://e.co/x**y*", "https://e.co/x**y"),
        # Underscores before a CJK letter close nothing (``__注意/__を`` is no bold either): the address goes on.
        ("__https://e.co/__を参照", "https://e.co/__を参照"),
    ],
)
def test_markers_that_close_no_style_stay_in_the_address(markdown, address) -> None:
    assert address in telegram_html.render(markdown)  # as a link's text: cut, a tag would part it
    assert f"<{address}>" in slack_mrkdwn.render(markdown)
    assert discord_markdown.render(markdown).count(address) == 1
