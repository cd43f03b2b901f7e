"""Code blocks in list items, as models write numbered steps, and code that holds a fence of its own:
on each platform the code stays code, exactly as written, and the numbering runs on."""

from __future__ import annotations

import pytest

from gateway.splitting import split_text
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html

STEPS = "Steps:\n\n1. Install it:\n   ```bash\n   pip install foo \\\n     --user\n   ```\n2. Run it.\n3. Done.\n"


def test_slack_shows_a_step_s_code_as_written_and_numbers_on():
    # Slack has no lists: the item's indentation inside ``` was the code's own, every line shifted right.
    assert slack_mrkdwn.render(STEPS) == (
        "Steps:\n\n1. Install it:\n```\npip install foo \\\n  --user\n```\n2. Run it.\n3. Done.")


def test_slack_bullet_and_nested_list_code_and_a_quote_stay_in_the_first_column():
    text = ("- Install:\n  ```\n  pip install foo\n  ```\n"
            "- Then\n  - check:\n    ```py\n    x = 1\n    ```\n  - quote:\n    > ok\n")
    assert slack_mrkdwn.render(text) == (
        "• Install:\n```\npip install foo\n```\n• Then\n  • check:\n```\nx = 1\n```\n  • quote:\n> ok")


def test_slack_item_that_starts_with_code_and_a_table_in_an_item():
    assert slack_mrkdwn.render("1. ```\n   a\n    b\n   ```\n2. | h |\n   |---|\n   | v |") == (
        "1. ```\na\n b\n```\n2. ```\nh\n-\nv\n```")


def test_telegram_and_discord_keep_a_step_s_code_and_its_numbering():
    # Telegram: <pre> lines are never indented; Discord reads the item's indentation as its list's.
    assert telegram_html.render(STEPS) == (
        'Steps:\n\n1. Install it:\n   <pre><code class="language-bash">pip install foo \\\n  --user</code></pre>\n'
        "2. Run it.\n3. Done.")
    assert discord_markdown.render(STEPS) == (
        "Steps:\n\n1. Install it:\n   ```bash\n   pip install foo \\\n     --user\n   ```\n2. Run it.\n3. Done.")


@pytest.mark.parametrize("render", [slack_mrkdwn.render, discord_markdown.render], ids=["slack", "discord"])
def test_a_split_list_of_steps_with_code_numbers_on_in_every_part(render):
    text = "Do this:\n\n" + "".join(f"1. Step {i}:\n   ```\n   run {i}\n   ```\n" for i in range(1, 9))
    parts = split_text(text, 90, lambda t: len(render(t)))
    rendered = "\n".join(render(p) for p in parts)
    assert len(parts) > 2
    numbers = [line.split(".")[0].strip() for line in rendered.split("\n") if "Step" in line]
    assert numbers == [str(i) for i in range(1, 9)]
    assert rendered.count("```") == 16


@pytest.mark.parametrize(("render", "opening"), [(slack_mrkdwn.render, "```\n"), (discord_markdown.render, "```md\n")],
                         ids=["slack", "discord"])
def test_code_holding_a_four_backtick_fence_is_not_ended_by_it(render, opening):
    # Showing how to nest fences: replacing ``` alone left ```` as `\u200b```, three in a row, which
    # Slack and Discord read as the end of the block (the rest of the reply then shown as markup).
    rendered = render("`````md\n````py\nx\n````\n`````")
    body = rendered.removeprefix(opening).removesuffix("\n```")
    assert rendered.startswith(opening) and "```" not in body
    assert body.replace("\u200b", "") == "````py\nx\n````"


def test_slack_inline_code_holding_four_backticks_is_not_ended_by_them():
    rendered = slack_mrkdwn.render("run `` ````x ``")
    body = rendered.removeprefix("run ```").removesuffix("```")
    assert "```" not in body and body.replace("\u200b", "") == "````x"
