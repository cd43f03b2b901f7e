"""The web chat page's Markdown (platforms/web_static/markdown.js) in a real headless chromium:
lists and backslash escapes, read as the gateway's parser reads them for the other platforms.

Each test sends a message from a fresh page and reads the DOM its bubble shows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from platforms.formatting import markdown
from tests.web_client import post_message, web_chats

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

# The blocks a bubble shows, as tags: lists (an ordered one with its start when not 1), their items,
# code blocks, quotes, headings, rules and tables (their rows and cells); the text between them left out.
SHAPE = """el => {
  const out = [];
  const blocks = ["ul", "ol", "li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "tr",
                  "th", "td"];
  const walk = (node) => {
    for (const child of node.children) {
      const tag = child.tagName.toLowerCase();
      if (tag === "thead" || tag === "tbody") walk(child);
      if (!blocks.includes(tag)) continue;
      out.push(tag === "ol" && child.getAttribute("start") ? `ol start=${child.getAttribute("start")}` : tag);
      if (tag === "pre" || tag === "hr") continue;
      walk(child);
      out.push("/" + tag);
    }
  };
  walk(el);
  return out;
}"""
# Each list item's own text (what a nested list or a code block in it holds left out).
ITEMS = """el => [...el.querySelectorAll("li")].map(li => [...li.childNodes]
  .filter(n => !["UL", "OL", "PRE"].includes(n.nodeName)).map(n => n.textContent).join(""))"""


@pytest_asyncio.fixture(loop_scope="session")
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


async def shown_as_sent(chat, page, text: str):
    """The text of the user's message ``text`` as a fresh chat's page shows it once sent."""
    web = await chat()
    await page.goto(f"{web.base}/chat?chat=c1")
    await page.wait_for_selector("body[data-state=connected]")
    await page.fill("#input", text)
    await page.click("#send")
    return await page.wait_for_selector("[data-kind=user] .text")


async def styled_now(page, expression: str) -> Any:
    """The JavaScript ``expression`` of ``el``, the user's message as the page shows it now: computed
    styles need the element on the page, and the one `shown_as_sent` returned may have been redrawn since."""
    handle = await page.wait_for_function(
        "() => { const el = document.querySelector('[data-kind=user] .text');"
        " return el ? [" + expression + "] : null; }")
    return (await handle.json_value())[0]


def gateway_shape(text: str) -> list[str]:
    """`SHAPE` of ``text`` as markdown-it reads it for Telegram, Slack and Discord."""
    out = []
    for token in markdown.parse(text):
        if token.type in ("bullet_list_open", "list_item_open"):
            out.append(token.tag)
        elif token.type == "ordered_list_open":
            start = token.attrGet("start")
            out.append(f"ol start={start}" if start is not None and int(start) != 1 else "ol")
        elif token.type in ("bullet_list_close", "ordered_list_close", "list_item_close"):
            out.append("/" + token.tag)
        elif token.type in ("fence", "code_block"):
            out.append("pre")
        elif token.type == "hr":
            out.append("hr")
        elif token.type in ("blockquote_open", "heading_open", "table_open", "tr_open", "th_open", "td_open"):
            out.append(token.tag)
        elif token.type in ("blockquote_close", "heading_close", "table_close", "tr_close", "th_close", "td_close"):
            out.append("/" + token.tag)
    return out


# Each styled span a bubble shows, as its tag and its text, in the order they open.
STYLED = """el => [...el.querySelectorAll("em, strong, s, code")].map(e => [e.tagName.toLowerCase(), e.textContent])"""
_STYLE_TAGS = {"em_open": "em", "strong_open": "strong", "s_open": "s"}


def gateway_styled(text: str) -> list[list[str]]:
    """`STYLED` of ``text`` as markdown-it reads it for the other platforms."""
    out: list[list[str]] = []

    def walk(children) -> None:
        for i, tok in enumerate(children):
            if tok.type in _STYLE_TAGS:
                out.append([_STYLE_TAGS[tok.type], markdown.plain(children[i + 1:markdown.closing(children, i)])])
            elif tok.type == "code_inline":
                out.append(["code", tok.content])

    for token in markdown.parse(text):
        if token.type == "inline":
            walk(token.children or [])
    return out


async def test_bullet_lists_are_lists_of_their_items(chat, page) -> None:
    # Every list showed as typed, its "- " markers as text, one line each.
    text = "Compare these:\n- apples\n- pears\n* figs\n* kiwis\n+ plums\n\nThat's all."
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["ul", "li", "/li", "li", "/li", "/ul", "ul", "li", "/li", "li", "/li",
                                          "/ul", "ul", "li", "/li", "/ul"]  # another marker: another list
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.evaluate(ITEMS) == ["apples", "pears", "figs", "kiwis", "plums"]
    # The text around the lists shows as typed, the blank line after them too.
    assert await mine.text_content() == "Compare these:\napplespearsfigskiwisplums\nThat's all."
    assert await mine.eval_on_selector_all("ul", "els => els.map(e => e.className)") == ["", "", ""]


async def test_an_ordered_list_counts_from_its_first_number_and_only_1_starts_one_within_a_sentence(
        chat, page) -> None:
    text = ("Steps:\n1. Install\n2. Run\n\nLater:\n\n7) Seven\n8) Eight\n10) Ten\n\n"
            "The year\n2024. was text, as\n0. is not a list here either.\n\n0. but is one here")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["ol", "li", "/li", "li", "/li", "/ol", "ol start=7", "li", "/li", "li",
                                          "/li", "li", "/li", "/ol", "ol start=0", "li", "/li", "/ol"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.evaluate(ITEMS) == ["Install", "Run", "Seven", "Eight", "Ten", "but is one here"]
    assert await mine.eval_on_selector_all("ol", "els => els.map(e => e.start)") == [1, 7, 0]
    assert "The year\n2024. was text, as\n0. is not a list here either." in await mine.text_content()


async def test_a_list_nests_by_its_items_indentation_and_a_wrapped_line_stays_in_its_item(chat, page) -> None:
    text = ("- fruit\n  - apples\n    1. red\n    2. green\n  - pears, a long\nline the model wrapped\n- veg\n---\n"
            "1. four-space style\n    - nested\n        - deeper")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == [
        "ul", "li", "ul", "li", "ol", "li", "/li", "li", "/li", "/ol", "/li", "li", "/li", "/ul", "/li",
        "li", "/li", "/ul", "hr",
        "ol", "li", "ul", "li", "ul", "li", "/li", "/ul", "/li", "/ul", "/li", "/ol"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.evaluate(ITEMS) == ["fruit\n", "apples\n", "red", "green",
                                          "pears, a long\nline the model wrapped", "veg", "four-space style\n",
                                          "nested\n", "deeper"]
    # The rule is not the last item's: it ends the list.
    assert await mine.eval_on_selector("hr", "e => e.parentElement.className") == "text"


async def test_a_list_items_text_keeps_its_markdown_and_a_blank_line_between_items_keeps_one_list(
        chat, page) -> None:
    text = ("1. **Bold** with `code`, [a link](https://example.com/a) and https://example.com/b\n\n"
            "2. Second, after a blank line\n\n   its own second paragraph\n3. Third <img src=x onerror=alert(1)>, "
            "[not linked](javascript:alert(1))")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["ol", "li", "/li", "li", "/li", "li", "/li", "/ol"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    first = await mine.query_selector("li")
    assert await first.eval_on_selector_all("strong", "els => els.map(e => e.textContent)") == ["Bold"]
    assert await first.eval_on_selector_all("code", "els => els.map(e => e.textContent)") == ["code"]
    assert await first.eval_on_selector_all("a", "els => els.map(e => [e.getAttribute('href'), e.textContent])") == [
        ["https://example.com/a", "a link"], ["https://example.com/b", "https://example.com/b"]]
    assert await mine.evaluate(ITEMS) == ["Bold with code, a link and https://example.com/b",
                                          "Second, after a blank line\n\nits own second paragraph",
                                          "Third <img src=x onerror=alert(1)>, [not linked](javascript:alert(1))"]
    assert await mine.eval_on_selector("ol", "e => e.className") == "loose"
    assert await mine.eval_on_selector_all("img, li:last-child a", "els => els.length") == 0  # text, as typed


async def test_a_code_block_in_a_list_item_is_in_the_item(chat, page) -> None:
    text = ("1. Install:\n   ```bash\n   pip install x\n   ```\n2. Configure:\n   - the file:\n\n"
            "     ```yaml\n     key: value\n     ```\n3. Run `x`")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["ol", "li", "pre", "/li", "li", "ul", "li", "pre", "/li", "/ul", "/li",
                                          "li", "/li", "/ol"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.eval_on_selector_all("li > pre", "els => els.map(e => e.textContent)") == [
        "pip install x", "key: value"]
    assert await mine.evaluate(ITEMS) == ["Install:\n", "Configure:\n", "the file:\n\n", "Run x"]


async def test_a_tab_in_a_lists_indentation_runs_to_the_next_multiple_of_four_columns(chat, page) -> None:
    # A tab counted as one column: "-\tapples" was text, its - and tab shown, and so were the lists after it
    # and the rule (*\t*\t*).
    text = ("-\tapples\n-\tpears\n\t-\tnested\n\n1.\tInstall:\n\n\t\tpip install x\n\t\t\tindented\n*\t\tcode first\n\n"
            "```make\nall:\n\tgo build\n```\n*\t*\t*")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["ul", "li", "/li", "li", "ul", "li", "/li", "/ul", "/li", "/ul",
                                          "ol", "li", "pre", "/li", "/ol", "ul", "li", "pre", "/li", "/ul", "pre", "hr"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.evaluate(ITEMS) == ["apples", "pears\n", "nested", "Install:\n\n", ""]
    # A tab the indentation takes part of leaves the rest as spaces; one it does not touch is the code's own.
    assert await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)") == [
        "pip install x\n\tindented", "  code first", "all:\n\tgo build"]


async def test_a_tab_after_a_quotes_marker_runs_only_to_the_next_multiple_of_four_columns(chat, page) -> None:
    # After "> " a tab starts two columns in and is two columns wide, so "> \t```" opens a fence indented
    # two columns, "> \t- item" is an item and "> \t> on" carries on the quote within (and a tab-indented
    # item three columns in is nested): they showed as typed, their ```, - and > too.
    text = ("> \t```python\n> \tprint(1)\n> \t\tindented\n> \t```\n> \t- item\n\n1. a\n   \t- b\n\n"
            "> > nested\n> \t> on")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["blockquote", "pre", "ul", "li", "/li", "/ul", "/blockquote",
                                          "ol", "li", "ul", "li", "/li", "/ul", "/li", "/ol",
                                          "blockquote", "blockquote", "/blockquote", "/blockquote"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    # The fence's two columns are its lines' indentation, not their code's: the tab beyond them stays.
    assert await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)") == ["print(1)\n\tindented"]
    assert await mine.evaluate(ITEMS) == ["item", "a\n", "b"]
    assert await mine.eval_on_selector("blockquote blockquote", "e => e.textContent") == "nested\non"


async def test_a_backslash_shows_the_punctuation_after_it_as_typed_but_code_keeps_it(chat, page) -> None:
    # The backslashes showed, and **, ` and [ ] after them were read as Markdown all the same.
    text = ("\\*\\*not bold\\*\\*, \\`not code\\`, \\[not a link\\](https://example.com/x), \\_ \\# \\\\ \\a \\é, "
            "`a\\*b` and **bold \\*star\\*** [a \\] in \\`it](https://example.com/y)\n"
            "\\- not a list\n1\\. nor this\nline\\\nbreak, a last \\\n```\n\\*kept\\*\n```\n    \\*kept too\\*")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["pre", "pre"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)") == [
        "\\*kept\\*", "\\*kept too\\*"]
    assert await mine.eval_on_selector_all("code:not(pre code)", "els => els.map(e => e.textContent)") == ["a\\*b"]
    assert await mine.eval_on_selector_all("strong", "els => els.map(e => e.textContent)") == ["bold *star*"]
    assert await mine.eval_on_selector_all("a", "els => els.map(e => [e.getAttribute('href'), e.textContent])") == [
        ["https://example.com/x"] * 2, ["https://example.com/y", "a ] in `it"]]  # the first written bare
    # Before a letter (ASCII or not) a backslash stays; at the end of a line it is a line break, but
    # not at the end of a paragraph.
    assert await mine.text_content() == (
        "**not bold**, `not code`, [not a link](https://example.com/x), _ # \\ \\a \\é, a\\*b and bold *star* "
        "a ] in `it\n- not a list\n1. nor this\nline\nbreak, a last \\\n\\*kept\\*\\*kept too\\*")


async def test_lines_four_spaces_in_are_a_code_block_unless_they_carry_on_a_paragraph(chat, page) -> None:
    text = "Run:\n\n    make test\n      --verbose\n\n    make lint\n\nthen\n    this carries on the sentence."
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["pre"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)") == [
        "make test\n  --verbose\n\nmake lint"]
    assert await mine.text_content() == ("Run:\n\nmake test\n  --verbose\n\nmake lint"
                                         "\nthen\nthis carries on the sentence.")


async def test_a_paragraphs_lines_lose_their_indentation_as_in_markdown(chat, page) -> None:
    # A wrapped line showed the spaces or tabs it was indented by, which the other platforms drop.
    text = ("A sentence the model\n   wrapped and\n\t\tindented, **bold\n      across** lines\n    # not a heading\n\n"
            "  Another paragraph,\n two spaces in.")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == [] == gateway_shape(text)
    assert await mine.text_content() == ("A sentence the model\nwrapped and\nindented, bold\nacross lines\n"
                                         "# not a heading\n\nAnother paragraph,\ntwo spaces in.")
    assert await mine.text_content() == "\n\n".join(
        markdown.plain(token.children or ()) for token in markdown.parse(text) if token.type == "inline")
    assert await mine.evaluate(STYLED) == [["strong", "bold\nacross"]] == gateway_styled(text)


async def test_a_list_items_line_four_columns_past_its_text_carries_the_text_on_whatever_it_holds(chat, page) -> None:
    # Such a line lost its indentation before it was read, so it was a heading, a code block or an
    # underline making the item's text a heading.
    text = "- a\n      # h\n      ***\n  b\n      ---"
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["ul", "li", "/li", "/ul"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.evaluate(ITEMS) == ["a\n# h\n***\nb\n---"]


async def test_a_heading_a_quote_or_an_underline_ends_a_list_or_a_paragraph_as_in_markdown(chat, page) -> None:
    # A list after a heading or an underlined title was read as the heading's text carried on, a quote
    # line as the list item's, and an item holding nothing took the text after a blank line.
    text = "## Plan\n2. Second\n- item\n> a quote after the list\n\nText\n===\n3. Third\n-\n\n  not in the item"
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["h2", "/h2", "ol start=2", "li", "/li", "/ol", "ul", "li", "/li", "/ul",
                                          "blockquote", "/blockquote", "h1", "/h1",
                                          "ol start=3", "li", "/li", "/ol", "ul", "li", "/li", "/ul"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.evaluate(ITEMS) == ["Second", "item", "Third", ""]
    assert await mine.text_content() == "PlanSeconditema quote after the listTextThird\nnot in the item"


async def test_italics_and_strikethrough_are_styled_but_not_within_words_or_around_spaces(chat, page) -> None:
    # *x*, _x_ and ~~x~~ showed as typed, their markers too.
    text = ("*one* _two_ ***both*** ~~gone~~ **bold *in* it** *it **in** it* `*code*` *a `b*` c* **x *y***\n"
            "snake_case_names, 2 * 3 * 4, a__b__c, ~one~, \\*escaped\\*, x*y*z _é_ é_x_ ** spaced **\n"
            "*across\nlines* and *not across\n\na blank line*")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(STYLED) == [
        ["em", "one"], ["em", "two"], ["em", "both"], ["strong", "both"], ["s", "gone"], ["strong", "bold in it"],
        ["em", "in"], ["em", "it in it"], ["strong", "in"], ["code", "*code*"], ["em", "a b* c"], ["code", "b*"],
        ["strong", "x y"], ["em", "y"], ["em", "y"], ["em", "é"], ["em", "across\nlines"]]
    assert await mine.evaluate(STYLED) == gateway_styled(text)
    assert await mine.text_content() == (
        "one two both gone bold in it it in it *code* a b* c x y\n"
        "snake_case_names, 2 * 3 * 4, a__b__c, ~one~, *escaped*, xyz é é_x_ ** spaced **\n"
        "across\nlines and *not across\n\na blank line*")


async def test_emphasis_next_to_punctuation_opens_and_closes_as_markdown_it_reads_it(chat, page) -> None:
    # A run flanks punctuation only with a space or punctuation on its other side: `**Note:**next` was bold here.
    # One case a paragraph: markdown-it pairs the runs of a paragraph across all of it.
    cases = ["**Note:**next", "**Note:** next", 'a**"b"**', '"**b**"', "**a:**b c**", "foo-_(bar)_",
             "_(bar)_baz", "__a__.", "_a_'s", "*a*!", "~~(x)~~y", "~~x~~.", "5*(*2*)*", "x_y_",
             "*\ufeffa*", "*a\u2028*", "*\u00a0a*"]
    text = "\n\n".join(cases)
    mine = await shown_as_sent(chat, page, text)
    shown = await mine.evaluate(STYLED)
    assert shown == gateway_styled(text), (shown, gateway_styled(text))
    assert [tag for tag, _ in gateway_styled(text)] == [
        "strong", "strong", "strong", "em", "strong", "em", "em", "s", "em", "em", "em"]


async def test_headings_are_headings_sized_for_a_chat_bubble(chat, page) -> None:
    # "# Title" showed as typed, its # too, and an underlined title with its === line.
    text = ("# One\n## Two *it*\n###### Six ##\n####### seven\n#hashtag\n\nTitle\n===\nSub\n---\n\\# not a heading\n"
            "```\n# code\n```")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["h1", "/h1", "h2", "/h2", "h6", "/h6", "h1", "/h1", "h2", "/h2", "pre"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.eval_on_selector_all("h1, h2, h6", "els => els.map(e => e.textContent)") == [
        "One", "Two it", "Six", "Title", "Sub"]
    assert await mine.eval_on_selector_all("h2 em", "els => els.map(e => e.textContent)") == ["it"]
    assert await mine.text_content() == ("OneTwo itSix####### seven\n#hashtag\n\nTitleSub# not a heading\n# code")
    # A bubble's heading is a little larger than its text at most: a chat, not a document.
    sizes = await styled_now(page, "[el, ...el.querySelectorAll('h1, h6')].map(e => parseFloat(getComputedStyle(e)"
                                   ".fontSize))")
    assert sizes[0] <= sizes[3] and max(sizes[1:]) <= 1.25 * sizes[0]


async def test_a_quote_is_a_quote_holding_its_own_blocks_nested_quotes_too(chat, page) -> None:
    # "> " lines showed as typed, their > too. Hebrew first: the quote's edge is on the right.
    text = ("> שלום *it*\ncarried on\n>> nested\n\n> - an item\n>\n>       indented code\n"
            "> ```\n> `fenced`\n> ```\n\nafter")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["blockquote", "blockquote", "/blockquote", "/blockquote",
                                          "blockquote", "ul", "li", "pre", "/li", "/ul", "pre", "/blockquote"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)") == [
        "indented code", "`fenced`"]
    assert await mine.eval_on_selector_all("em", "els => els.map(e => e.textContent)") == ["it"]
    assert await mine.text_content() == "שלום it\ncarried on\nnestedan item\n\nindented code`fenced`\nafter"
    edges = await styled_now(page, "[getComputedStyle(el.querySelector('blockquote')).borderRightWidth, "
                                   "getComputedStyle(el.querySelector('blockquote')).borderLeftWidth]")
    assert edges == ["3px", "0px"]


async def test_a_rule_is_a_rule_but_an_underlined_line_is_a_heading(chat, page) -> None:
    # ---, *** and ___ lines showed as typed.
    text = "a\n\n---\n***\n_ _ _\nb\n***\nc\n---\n\n- item\n* * *"
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["hr", "hr", "hr", "hr", "h2", "/h2", "ul", "li", "/li", "/ul", "hr"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.text_content() == "a\n\nb\ncitem"


# Each table row's cells, as their text.
CELLS = """el => [...el.querySelectorAll("tr")].map(tr => [...tr.cells].map(c => c.textContent))"""


def gateway_cells(text: str) -> list[list[str]]:
    """`CELLS` of ``text`` as markdown-it reads it for the other platforms."""
    rows: list[list[str]] = []
    tokens = markdown.parse(text)
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            rows.append([])
        elif token.type in ("th_open", "td_open"):
            rows[-1].append(markdown.plain(tokens[i + 1].children or ()))
    return rows


async def test_a_pipe_table_is_a_table_its_cells_keeping_their_markdown(chat, page) -> None:
    # The table showed as typed, its | and --- lines too.
    text = ("Results:\n| Name | Score | Note |\n|:-----|------:|:----:|\n| **a** | 1 | `x\\|y` |\n| b | 2 |\n"
            "c | 3 | [no](javascript:alert(1)) | extra\n\nnot | a table\n--- | --- | ---\n\n| x |\n|---|\n- after")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == [
        "table", "tr", "th", "/th", "th", "/th", "th", "/th", "th", "/th", "/tr",
        "tr", "td", "/td", "td", "/td", "td", "/td", "/tr", "tr", "td", "/td", "td", "/td", "td", "/td", "/tr",
        "tr", "td", "/td", "td", "/td", "td", "/td", "td", "/td", "/tr", "/table",
        "table", "tr", "th", "/th", "/tr", "/table", "ul", "li", "/li", "/ul"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    # The last row's cell beyond the header's shows, under an empty header cell, as on the other platforms.
    assert await mine.evaluate(CELLS) == [["Name", "Score", "Note", ""], ["a", "1", "x|y"], ["b", "2", ""],
                                          ["c", "3", "[no](javascript:alert(1))", "extra"], ["x"]]
    assert await mine.evaluate(CELLS) == gateway_cells(text)
    assert await mine.eval_on_selector_all("td strong, td code", "els => els.map(e => e.textContent)") == ["a", "x|y"]
    assert await mine.eval_on_selector_all("table a", "els => els.length") == 0
    assert await styled_now(page, "[...el.querySelectorAll('th')].map(e => getComputedStyle(e).textAlign)") == [
        "left", "right", "center", "start", "start"]
    assert "Results:\n" in await mine.text_content()
    assert "not | a table\n--- | --- | ---" in await mine.text_content()



async def test_a_tables_delimiter_row_may_hold_tabs_but_no_line_of_it_is_four_columns_in(chat, page) -> None:
    # A tab around a delimiter row's cells made no table, and a header or delimiter row four spaces in,
    # which carries the paragraph on in markdown-it, made one.
    text = "| a | b |\n|:---\t|\t---:|\n| 1 | 2 |\n\nc | d\n    --- | ---\n\ntext\n    e | f\n--- | ---"
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["table", "tr", "th", "/th", "th", "/th", "/tr",
                                          "tr", "td", "/td", "td", "/td", "/tr", "/table"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.evaluate(CELLS) == [["a", "b"], ["1", "2"]] == gateway_cells(text)
    assert await styled_now(page, "[...el.querySelectorAll('th')].map(e => getComputedStyle(e).textAlign)") == [
        "left", "right"]
    assert await mine.text_content() == "ab12\nc | d\n--- | ---\n\ntext\ne | f\n--- | ---"


def gateway_paragraphs(text: str) -> str:
    """The text of ``text``'s paragraphs as markdown-it reads them, a blank line between two."""
    return "\n\n".join(markdown.plain(token.children or ()) for token in markdown.parse(text) if token.type == "inline")


# Each link a bubble shows, as its address (percent-encoded, as the browser reads it) and its text.
LINKS = """el => [...el.querySelectorAll("a")].map(a => [a.href, a.textContent])"""


def gateway_links(text: str) -> list[list[str]]:
    """`LINKS` of ``text`` as markdown-it reads it for the other platforms."""
    out: list[list[str]] = []
    for token in markdown.parse(text, markdown.definitions(text)):
        children = token.children or []
        for i, tok in enumerate(children):
            if tok.type == "link_open":
                out.append([str(tok.attrGet("href")), markdown.plain(children[i + 1:markdown.closing(children, i)])])
    return out


async def test_unicode_spaces_are_text_not_indentation_as_markdown_it_reads_them(chat, page) -> None:
    # A line's no-break, em and ideographic spaces went as if they were its indentation, and a line of
    # only no-break spaces was read as a blank line, ending the paragraph. Only spaces and tabs indent
    # a line in CommonMark; markdown-it trims a paragraph's ends as JavaScript's trim() does, though.
    text = ("10\u00a0km, a line the model\n\u00a0\u00a0indented with no-break spaces,\n\u2003an em space\n"
            "\u3000\u3000and ideographic ones\n\u00a0\u00a0\u00a0\nthe line above holds only no-break spaces\n\n"
            "\u00a0\u00a0\u00a0\n\n\u00a0 an edge's go\u00a0\n\n"
            "a\u00a0*b*\u00a0c\n\n**not bold\u00a0**\n\n*\u3000nor this*")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == [] == gateway_shape(text)
    assert await mine.text_content() == (
        "10\u00a0km, a line the model\n\u00a0\u00a0indented with no-break spaces,\n\u2003an em space\n"
        "\u3000\u3000and ideographic ones\n\u00a0\u00a0\u00a0\nthe line above holds only no-break spaces\n\n\n\n"
        "an edge's go\n\na\u00a0b\u00a0c\n\n**not bold\u00a0**\n\n*\u3000nor this*")
    assert await mine.text_content() == gateway_paragraphs(text)
    # A no-break space is a space where emphasis is concerned: ** after one does not close, * before one opens nothing.
    assert await mine.evaluate(STYLED) == [["em", "b"]] == gateway_styled(text)


async def test_a_line_of_unicode_spaces_is_neither_blank_nor_indented_in_blocks(chat, page) -> None:
    # Each was read as a blank line or as indentation: the code block ran on, the fence closed at
    # "```\u00a0", the table took the line after one as a row, the item holding a no-break space could
    # not end the paragraph, and the list was spaced out.
    text = ("    code\n\u00a0\u00a0\n    not code\n\n```\nfenced\n```\u00a0\nstill fenced\n```\n"
            "# Title\u00a0\u00a0\n\u00a0Under\n\u00a0lined\n===\n"
            "| a | b |\n|:---|---|\n| 1 | 2 |\n\u00a0\u00a0\n| 3 | 4 |\n\n"
            "text\n* \u00a0\n\n- a\n\u00a0\u00a0\u00a0\n- b\n\u00a0\u00a0carried on")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["pre", "pre", "h1", "/h1", "h1", "/h1",
                                          "table", "tr", "th", "/th", "th", "/th", "/tr",
                                          "tr", "td", "/td", "td", "/td", "/tr", "/table",
                                          "ul", "li", "/li", "/ul", "ul", "li", "/li", "li", "/li", "/ul"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)") == [
        "code", "fenced\n```\u00a0\nstill fenced"]
    assert await mine.eval_on_selector_all("h1", "els => els.map(e => e.textContent)") == [
        "Title", "Under\n\u00a0lined"]
    assert await mine.evaluate(CELLS) == [["a", "b"], ["1", "2"]] == gateway_cells(text)
    assert await mine.evaluate(ITEMS) == ["", "a", "b\n\u00a0\u00a0carried on"]
    assert await mine.eval_on_selector_all("ul", "els => els.map(e => e.className)") == ["", ""]  # none spaced out
    assert "not code" in await mine.text_content()
    assert "| 3 | 4 |" in await mine.text_content()


async def test_a_link_address_may_hold_unicode_spaces_but_a_label_of_only_spaces_is_no_label(chat, page) -> None:
    # Such a link or definition showed as typed; the definition of a label of only a no-break space
    # showed as nothing, though it is text. A label's spaces of any kind match as one space.
    text = ("[ten km](https://example.com/10\u00a0km) and [r]\n\n[r]: https://example.com/a\u00a0b\n"
            "[a b]: https://example.com/ab\n\n[a\u00a0b] [A\u3000 B]\n\n"
            "[\u00a0]: https://example.com/blank\n\n[\u00a0]")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(LINKS) == [
        ["https://example.com/10%C2%A0km", "ten km"], ["https://example.com/a%C2%A0b", "r"],
        ["https://example.com/ab", "a\u00a0b"], ["https://example.com/ab", "A\u3000 B"],
        ["https://example.com/blank"] * 2]
    assert await mine.evaluate(LINKS) == gateway_links(text)
    assert "[\u00a0]: https://example.com/blank" in await mine.text_content()


async def test_a_carriage_return_ends_a_line_as_a_line_feed_does(chat, page) -> None:
    # A text written with CRLF line endings (or only CRs) is read as markdown-it reads it: its blank
    # lines are blank, its fences fences.
    web = await chat()
    text = "a list:\r\n- one\r\n- two\r\n\r\n```\r\ncode\r\n```\rafter\r\r# Heading"
    async with aiohttp.ClientSession() as http:  # a page's box sends LFs only
        await post_message(http, web.base, "c1", text, key="key-crlf-text")
    await page.goto(f"{web.base}/chat?chat=c1")
    mine = await page.wait_for_selector("[data-kind=user] .text")
    assert await mine.evaluate(SHAPE) == ["ul", "li", "/li", "li", "/li", "/ul", "pre", "h1", "/h1"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.eval_on_selector("ul", "e => e.className") == ""
    assert await mine.eval_on_selector_all("pre", "els => els.map(e => e.textContent)") == ["code"]
    assert await mine.text_content() == "a list:\nonetwocodeafter\n\nHeading"


def web_links(text: str) -> list[list[str]]:
    """`gateway_links` of ``text`` but those to an address other than a web or mail one, which the page
    never links."""
    return [link for link in gateway_links(text) if link[0].lower().startswith(("http://", "https://", "mailto:"))]


# Each link a bubble shows, as the address it was given, before the browser reads it: the one markdown-it
# writes for the other platforms (a backslash would be a slash, a scheme in capitals lowercased, to `a.href`).
HREFS = """el => [...el.querySelectorAll("a")].map(a => [a.getAttribute("href"), a.textContent])"""


async def test_an_address_between_angle_brackets_is_a_link_as_markdown_it_reads_it(chat, page) -> None:
    # <https://...> and <a@b.example> showed as typed, their brackets too, where markdown-it links them
    # for the other platforms; Markdown-looking characters within them were read as Markdown.
    text = ("See <https://example.com/_a_/b> or <a.b+c@mail.example.org>, <mailto:team@example.com>, "
            "<https://example.com/a\\b%20c%zz|d> and *around <https://example.com/x*y> it* "
            "**<http://example.com/b>**\n[see <https://example.com/in>](https://example.com/out)\n"
            "Text: <ftp://example.com/_f_> <javascript:alert(1)> <b> <a:b> <a@b..example> "
            "`<https://example.com/code>`, bare: <https://example.com/a b> \\<https://example.com/escaped>")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(LINKS) == [
        ["https://example.com/_a_/b"] * 2, ["mailto:a.b+c@mail.example.org", "a.b+c@mail.example.org"],
        ["mailto:team@example.com"] * 2,
        # Its address percent-encoded as markdown-it writes it: a backslash is no slash, a % no escape.
        ["https://example.com/a%5Cb%20c%25zz%7Cd", "https://example.com/a\\b%20c%zz|d"],
        ["https://example.com/x*y"] * 2, ["http://example.com/b"] * 2,
        ["https://example.com/out", "see https://example.com/in"],  # a link within a link cannot be followed
        ["https://example.com/a"] * 2, ["https://example.com/escaped"] * 2]
    assert await mine.evaluate(LINKS) == [link for link in web_links(text) if link[0] != "https://example.com/in"]
    assert await mine.evaluate(STYLED) == [["em", "around https://example.com/x*y it"],
                                           ["strong", "http://example.com/b"], ["code", "<https://example.com/code>"]]
    assert await mine.evaluate(STYLED) == gateway_styled(text)
    # An address not a web or mail one shows as typed, as a [text](ftp://...) link does, its characters
    # never Markdown; neither does what is not an address.
    assert "Text: <ftp://example.com/_f_> <javascript:alert(1)> <b> <a:b> <a@b..example> " in await mine.text_content()
    assert "bare: <https://example.com/a b> <https://example.com/escaped>" in await mine.text_content()



async def test_a_links_scheme_is_read_whatever_its_case_as_markdown_it_reads_it(chat, page) -> None:
    # A scheme in capitals (schemes are caseless) made no link of any kind: markdown-it and the gateway's
    # bare-address rule link them all for the other platforms. Still only a web or mail address is linked.
    text = ("[t](HTTPS://example.com/a) <HTTPS://example.com/b> HTTPS://example.com/c, Http://example.com/d "
            "[m](MAILTO:a@example.com) <Mailto:b@example.com> [r] [u](<HTTP://example.com/u v>)\n\n"
            "[r]: Https://example.com/r\n\n"
            "Text: [f](FTP://example.com/f) <FTP://example.com/g> [j](JavaScript:alert(1)) <JAVASCRIPT:alert(1)>")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(HREFS) == [
        ["HTTPS://example.com/a", "t"], ["HTTPS://example.com/b"] * 2, ["HTTPS://example.com/c"] * 2,
        ["Http://example.com/d"] * 2, ["MAILTO:a@example.com", "m"], ["Mailto:b@example.com"] * 2,
        ["Https://example.com/r", "r"], ["HTTP://example.com/u%20v", "u"]]
    assert await mine.evaluate(HREFS) == web_links(text)
    assert await mine.evaluate(LINKS) == [[href.lower(), label] for href, label in web_links(text)]
    assert await mine.text_content() == (
        "t HTTPS://example.com/b HTTPS://example.com/c, Http://example.com/d m Mailto:b@example.com r u\n\n\n"
        "Text: [f](FTP://example.com/f) <FTP://example.com/g> [j](JavaScript:alert(1)) <JAVASCRIPT:alert(1)>")
    assert "Text: [f](FTP://example.com/f) <FTP://example.com/g> [j](JavaScript:alert(1)) <JAVASCRIPT:alert(1)>" in (
        await mine.text_content())


async def test_a_links_address_may_be_between_angle_brackets_spaces_and_all(chat, page) -> None:
    # [a](<https://x y>) showed as typed, as did [a](<https://x>): CommonMark allows an address between
    # <> in a link, spaces in it too, and markdown-it links it for the other platforms.
    text = ("[a](<https://example.com/x y>) [b](<https://example.com/(c>) [c](<https://example.com/\\>d\\<>), "
            "[**d**](<mailto:d@example.com>) [e](<https://example.com/e>)\n\n[r] [s]\n\n"
            "[r]: <https://example.com/r s>\n[s]: <https://example.com/\\>s>\n\n"
            "Not [f](<https://example.com/f\ng>) nor [g](<javascript:alert(1)>) nor [h](<https://example.com/<h>)")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(HREFS) == [
        ["https://example.com/x%20y", "a"], ["https://example.com/(c", "b"], ["https://example.com/%3Ed%3C", "c"],
        ["mailto:d@example.com", "d"], ["https://example.com/e", "e"], ["https://example.com/r%20s", "r"],
        ["https://example.com/%3Es", "s"], ["https://example.com/f"] * 2, ["https://example.com/"] * 2]
    assert await mine.evaluate(HREFS) == web_links(text)
    assert await mine.evaluate(STYLED) == [["strong", "d"]] == gateway_styled(text)
    # The definitions' lines show as nothing, the blank line after them as typed.
    assert await mine.text_content() == gateway_paragraphs(text).replace("\n\nNot", "\n\n\nNot")


async def test_a_links_address_is_unescaped_and_percent_encoded_as_markdown_it_writes_it(chat, page) -> None:
    # The address was used as typed: \_ led to /_ (a backslash is a slash to the browser), &amp; to &amp;
    # itself, and | , ` or % not starting an escape went as they are, where markdown-it unescapes and
    # percent-encodes the address for the other platforms (normalizeLink), as the page does for <https://...>.
    text = ("[a](https://example.com/a\\_b\\|c|d\\\\e\\f%20g%zz?h=1&amp;i=2&#x41;&#66;&copy;&notit;&#0;&nosuch;`é) "
            "[b](https://example.com/\\(p\\)q(r)) [c](<https://example.com/c\\ d&lt;>) [r] [s]\n\n"
            "[r]: https://example.com/r\\_s&amp;t|u\n[s]: <https://example.com/&#x26;>")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(HREFS) == [
        ["https://example.com/a_b%7Cc%7Cd%5Ce%5Cf%20g%25zz?h=1&i=2AB%C2%A9&notit;&#0;&nosuch;%60%C3%A9", "a"],
        ["https://example.com/(p)q(r)", "b"], ["https://example.com/c%5C%20d%3C", "c"],
        ["https://example.com/r_s&t%7Cu", "r"], ["https://example.com/&", "s"]]
    assert await mine.evaluate(HREFS) == web_links(text)
    assert await mine.evaluate(LINKS) == web_links(text)  # where the browser goes too


async def test_entity_references_in_text_are_their_characters_but_not_in_code(chat, page) -> None:
    # `AT&amp;T`, `&copy;` and `&#65;` showed as typed, where markdown-it reads them as `AT&T`, `©` and `A` for the
    # other platforms: in text, link texts, headings, table cells and emphasis, not in code. An unknown name stays
    # as typed, and so does a number too long; a number no text may hold is U+FFFD. `&#42;` is a `*` that opens
    # nothing, and `\&amp;` an escaped `&`.
    text = ("AT&amp;T &copy; &#x41;&#65; &nosuch; &notit; &#0; &#12345678; &#x110000; &#X1F600; &AMP; "
            "&#42;not em&#42; `&amp; in code` \\&amp; **&lt;b&gt;** [&quot;q&quot;](https://example.com/a) [&auml;] "
            "&amp&amp;\n\n# H &euro;\n\n| a&amp;b | c |\n|---|---|\n| &lt; | `&gt;` |\n\n```\n&amp; block\n```\n\n"
            "    &amp; indented")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    paragraph = ("AT&T \u00a9 AA &nosuch; &notit; \ufffd &#12345678; \ufffd \U0001f600 & *not em* &amp; in code "
                 '&amp; <b> "q" [\u00e4] &amp&')
    assert gateway_paragraphs(text).split("\n\n")[:2] == [paragraph, "H \u20ac"]
    assert await mine.text_content() == paragraph + "\n\nH \u20ac" + "a&bc<&gt;" + "&amp; block&amp; indented"
    assert await mine.evaluate(CELLS) == [["a&b", "c"], ["<", "&gt;"]] == gateway_cells(text)
    blocks = [["code", "&amp; block"], ["code", "&amp; indented"]]  # code blocks' <code>s, as typed too
    assert await mine.evaluate(STYLED) == [["code", "&amp; in code"], ["strong", "<b>"], ["code", "&gt;"]] + blocks
    assert await mine.evaluate(STYLED) == gateway_styled(text) + blocks
    assert await mine.evaluate(LINKS) == [["https://example.com/a", '"q"']] == gateway_links(text)
    # Text nodes only: what an entity spells is never markup.
    assert await mine.eval_on_selector_all("b", "els => els.length") == 0


# Each link a bubble shows, as `HREFS` and its title.
TITLES = """el => [...el.querySelectorAll("a")].map(a => [a.getAttribute("href"), a.textContent, a.title])"""


def gateway_titles(text: str) -> list[list[str]]:
    """`TITLES` of ``text`` as markdown-it writes its links for the other platforms (no title as "")."""
    out: list[list[str]] = []
    for token in markdown.parse(text, markdown.definitions(text)):
        children = token.children or []
        for i, tok in enumerate(children):
            if tok.type == "link_open":
                label = markdown.plain(children[i + 1:markdown.closing(children, i)])
                out.append([str(tok.attrGet("href")), label, str(tok.attrGet("title") or "")])
    return out


async def test_a_links_title_and_the_spaces_around_its_address_are_read_as_markdown_it_reads_them(
        chat, page) -> None:
    # [a](https://x "title"), with '' or () too, and [d]( https://x ) showed as typed, where markdown-it links them
    # for the other platforms, the title (its escapes and entity references read) the link's title.
    text = ('[a](https://example.com/a "A &amp; \\"t\\" \\\\") [b](https://example.com/b \'B\') '
            '[c](https://example.com/c (C\\))) [d]( https://example.com/d ) [e](<https://example.com/e f>\t"E &#0;") '
            '[f](\nhttps://example.com/f\n"F\nG"\n) [g](https://example.com/g "") [r] [s]\n\n'
            '[r]: https://example.com/r "R &copy;"\n[s]: <https://example.com/s> \'S \\\' q\'\n\n'
            'Not [h](https://example.com/h"H") [i](https://example.com/i "I"x) [j](<https://example.com/j>"J") '
            '[k](https://example.com/k "K) [l](https://example.com/l (L(l)))')
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(TITLES) == [
        ["https://example.com/a", "a", 'A & "t" \\'], ["https://example.com/b", "b", "B"],
        ["https://example.com/c", "c", "C)"], ["https://example.com/d", "d", ""],
        ["https://example.com/e%20f", "e", "E &#0;"], ["https://example.com/f", "f", "F\nG"],
        ["https://example.com/g", "g", ""], ["https://example.com/r", "r", "R \u00a9"],
        ["https://example.com/s", "s", "S ' q"], ["https://example.com/h%22H%22", "h", ""],
        ["https://example.com/i", "https://example.com/i", ""], ["https://example.com/j", "https://example.com/j", ""],
        ["https://example.com/k", "https://example.com/k", ""], ["https://example.com/l", "https://example.com/l", ""]]
    assert await mine.evaluate(TITLES) == gateway_titles(text)
    assert await mine.evaluate(LINKS) == gateway_links(text)
    # The definitions show as nothing; what is no link shows as typed, the bare addresses in it linked.
    assert await mine.text_content() == gateway_paragraphs(text).replace("\n\nNot", "\n\n\nNot")


async def test_a_browser_without_to_well_formed_shows_links_all_the_same(chat, page) -> None:
    # String.prototype.toWellFormed came with Chrome 111 and Firefox 119: before, every link threw.
    await page.add_init_script("delete String.prototype.toWellFormed;")
    text = "[a](https://example.com/a\\c%20d) <https://example.com/é> and https://example.com/x"
    mine = await shown_as_sent(chat, page, text)
    assert await page.evaluate("typeof String.prototype.toWellFormed") == "undefined"
    assert await mine.evaluate(HREFS) == [["https://example.com/a%5Cc%20d", "a"],
                                          ["https://example.com/%C3%A9", "https://example.com/é"],
                                          ["https://example.com/x", "https://example.com/x"]]
    assert await mine.evaluate(HREFS) == web_links(text)


async def test_a_run_of_backticks_opens_a_code_span_only_a_run_as_long_closes(chat, page) -> None:
    # Only one backtick opened a code span, closed by the next: ``a`b`` showed as a code span "a" between
    # backticks, ```x``` within a sentence as "x" between two, where markdown-it reads code spans "a`b" and "x"
    # for the other platforms. A run no run as long follows is text, all of it, and the text after it is read
    # on: ``a` showed as a backtick and a code span. A fence at the start of a line is a fence still.
    text = ("Use ``a`b`` or ```x``` or ````a```b```` now, and\n```sh\nls\n```\n"
            "``a` and `` `a ``b` then ```c`` d``` e ``` f")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["pre"] == gateway_shape(text)
    spans = await mine.eval_on_selector_all("code:not(pre code)", "els => els.map(e => ['code', e.textContent])")
    assert spans == [["code", "a`b"], ["code", "x"], ["code", "a```b"], ["code", "a` and "], ["code", "a ``b"],
                     ["code", "c`` d"]]
    assert spans == gateway_styled(text)
    assert await mine.text_content() == "Use a`b or x or a```b now, and\nls" + "a` and  a ``b then c`` d e ``` f"
    assert await mine.text_content() == gateway_paragraphs(text).replace("\n\n", "\nls")


async def test_a_code_span_runs_across_the_lines_of_a_paragraph_its_line_breaks_as_spaces(chat, page) -> None:
    # A code span the model's line wrapped showed as typed, backticks and all. markdown-it reads it across the
    # lines of a paragraph (a list item's or a quote's too) for the other platforms, its line breaks as spaces,
    # and the indentation of a line beyond its list item's as code; not across a blank line, which ends it.
    text = ("A `long\ncommand` wrapped\n\n- an `item's\n  code` and\n  its `own\n     indentation`\n\n"
            "> a `quoted\n> span`\n\nnot `across\n\na blank line`\n\nA `Title\n   across lines`\n===")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(SHAPE) == ["ul", "li", "/li", "/ul", "blockquote", "/blockquote", "h1", "/h1"]
    assert await mine.evaluate(SHAPE) == gateway_shape(text)
    assert await mine.evaluate(STYLED) == [
        ["code", "long command"], ["code", "item's code"], ["code", "own    indentation"], ["code", "quoted span"],
        ["code", "Title    across lines"]]
    assert await mine.evaluate(STYLED) == gateway_styled(text)
    # The text around them without the indentation of its lines, as on the other platforms.
    assert await mine.evaluate(ITEMS) == ["an item's code and\nits own    indentation"]
    assert await mine.text_content() == ("A long command wrapped\n\nan item's code and\nits own    indentation"
                                         "a quoted span\nnot `across\n\na blank line`\n\nA Title    across lines")


async def test_a_code_span_loses_a_space_at_each_end_when_both_are_spaces_as_markdown_it_reads_it(chat, page) -> None:
    # The code showed as typed between its backticks, so ` `` ` was three code spans of one space each, with
    # backticks between; markdown-it reads it as the code `` for the other platforms: one space off each end when
    # both are spaces, unless all of it is (a no-break space is not), a line break a space.
    text = "` `` ` `  a  ` ` ` `  ` ` a` ` \u00a0 ` `   ` `\n`"
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(STYLED) == [["code", "``"], ["code", " a "], ["code", " "], ["code", "  "],
                                           ["code", " a"], ["code", "\u00a0"], ["code", "   "], ["code", " "]]
    assert await mine.evaluate(STYLED) == gateway_styled(text)
    assert await mine.text_content() == gateway_paragraphs(text)


async def test_a_backslash_in_a_code_span_is_the_codes_own_and_a_run_closes_it_before_it_may_escape(
        chat, page) -> None:
    # `` \` `` showed as a backtick, a code span " \" and text: a backslash escapes nothing in code, so the
    # run of two closes there as markdown-it reads it for the other platforms; \``` leaves a run of two after the
    # backtick it escapes, which opens a code span. Out of code, \` is a backtick, as typed.
    text = "`` \\` `` and ``a\\`` and \\```b`` and \\`not code\\` and `c\\`d`"
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(STYLED) == [["code", "\\`"], ["code", "a\\"], ["code", "b"], ["code", "c\\"]]
    assert await mine.evaluate(STYLED) == gateway_styled(text)
    assert await mine.text_content() == "\\` and a\\ and `b and `not code` and c\\d`" == gateway_paragraphs(text)


async def test_code_spans_of_any_backticks_bind_tighter_than_emphasis_and_a_lone_run_is_its_text(chat, page) -> None:
    # An emphasis holding a backtick that opens no code span showed as typed, and one holding a code span of
    # two backticks too: markdown-it styles them for the other platforms, the backticks as text.
    text = "*a`*`b* *a `b* c` *a ` b* **a ``*`` b** **a *b ``c`` d* e** _f ``g_`` h_ ~~i ``` j~~"
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(STYLED) == [
        ["em", "a*b"], ["code", "*"], ["code", "b* c"], ["em", "a ` b"], ["strong", "a * b"], ["code", "*"],
        ["strong", "a b c d e"], ["em", "b c d"], ["code", "c"], ["em", "f g_ h"], ["code", "g_"], ["s", "i ``` j"]]
    assert await mine.evaluate(STYLED) == gateway_styled(text)
    assert await mine.text_content() == gateway_paragraphs(text)


async def test_a_links_text_may_hold_code_spans_of_any_backticks_and_a_lone_run(chat, page) -> None:
    # [a ``b`c`` d](url) and [e ``]`` f](url) were no links, and a backtick opening no code span made none of
    # [g ` h](url), where markdown-it links them all for the other platforms; a code span still takes the ] and
    # the address it covers, [i `](url)` j is no link. Reference links' texts too.
    text = ("[a ``b`c`` d](https://example.com/1) [e ``]`` f](https://example.com/2)\n\n"
            "[g ` h](https://example.com/3)\n\n[i `](https://example.com/4)` j\n\n[`k` l] [``m`n``]\n\n"
            "[`k` l]: https://example.com/5\n[``m`n``]: https://example.com/6")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(LINKS) == [
        ["https://example.com/1", "a b`c d"], ["https://example.com/2", "e ] f"], ["https://example.com/3", "g ` h"],
        ["https://example.com/5", "k l"], ["https://example.com/6", "m`n"]]
    assert await mine.evaluate(LINKS) == gateway_links(text)
    assert await mine.evaluate(STYLED) == [["code", "b`c"], ["code", "]"], ["code", "](https://example.com/4)"],
                                           ["code", "k"], ["code", "m`n"]]
    assert await mine.evaluate(STYLED) == gateway_styled(text)
    assert await mine.eval_on_selector_all("a code", "els => els.map(e => e.textContent)") == ["b`c", "]", "k", "m`n"]


async def test_a_bare_address_ends_at_a_backtick_as_the_gateway_ends_it(chat, page) -> None:
    # The page's bare address ran on over backticks, so https://example.com/a`b` was one link, its code span
    # part of the address; the gateway's bare-address rule ends it at the backtick for the other platforms.
    text = ("See https://example.com/a`b` and https://example.com/c``d`` e, (https://example.com/(f)`g`) "
            "https://example.com/h`")
    mine = await shown_as_sent(chat, page, text)
    assert await mine.evaluate(LINKS) == [["https://example.com/a"] * 2, ["https://example.com/c"] * 2,
                                          ["https://example.com/(f)"] * 2, ["https://example.com/h"] * 2]
    assert await mine.evaluate(LINKS) == gateway_links(text)
    assert await mine.evaluate(STYLED) == [["code", "b"], ["code", "d"], ["code", "g"]] == gateway_styled(text)
    assert await mine.text_content() == gateway_paragraphs(text)


RENDER_TIME = """
      const time = (text, renders, limit = Infinity) => {
        let fastest = Infinity;
        for (let round = 0; round < 5; round++) {
          const start = performance.now();
          let done = 0, spent = 0;
          while (done < renders && spent <= limit) {
            SwitchboardMarkdown.render(text, into);
            done++;
            spent = performance.now() - start;
          }
          fastest = Math.min(fastest, spent / done);
        }
        return fastest;
      };
"""
"""``time(text, renders, limit)``: ms a render of ``text`` takes on the page (into ``into``), the fastest of
rounds of ``renders`` renders (a pause for garbage collection slows one round, not all), a round given up
past ``limit`` ms."""


async def render_times(page, texts: list[tuple[str, str, str]]) -> list[list[Any]]:
    """``[name, short, long]`` for each ``(name, short text, long text)``: ms a render of each takes, with
    enough renders that the clock's steps (0.1 ms) do not count, the long one's given up at 40x the short's."""
    return await page.evaluate("""(texts) => {
      const into = document.createElement("div");
""" + RENDER_TIME + """
      return texts.map(([name, short, long]) => {
        let renders = 1;
        while (time(short, renders) * renders < 10) renders *= 2;
        const fast = time(short, renders);
        return [name, fast, time(long, renders, 40 * fast * renders)];
      });
    }""", texts)


async def render_growth(page, texts: list[tuple[str, str, str]], tries: int = 3) -> list[list[Any]]:
    """`render_times`, each case whose long text took 10x its short one or more measured again, up to ``tries``
    times in all, keeping its best: a render in time growing as the square of the text's length takes 16x for four
    times the text, however often it is measured, while a burst of load on the machine (another test's browser)
    slows one measurement, not three."""
    best = {name: [name, short, long] for name, short, long in await render_times(page, texts)}
    for _ in range(tries - 1):
        again = [case for case in texts if best[case[0]][2] >= 10 * best[case[0]][1]]
        if not again:
            break
        for name, short, long in await render_times(page, again):
            if long / short < best[name][2] / best[name][1]:
                best[name] = [name, short, long]
    return [best[case[0]] for case in texts]


async def test_a_message_of_long_link_like_runs_renders_in_time_growing_as_its_length(chat, page) -> None:
    # The link patterns are tried at each [ of a message, and a link's address is unescaped: none may read a
    # long run again at each of its characters, in time growing as its square.
    worst = {"unclosed <": "[a](<https://x/{}", "<": "[a](<{}", "unclosed": "[a](https://x/{}",
             "entities": "[a](https://x/{})", "names": "[a](https://x/{})", "escapes": "[a](<https://x/{}>)",
             "spaces": "[a](https://x/{}x)", "titles": "{}", "unclosed title": '[a](https://x/ "{}',
             "title escapes": '[a](https://x/ "{}'}
    runs = {"unclosed <": "\\x", "<": "[a](<", "unclosed": "\\x", "entities": "&amp;", "escapes": "\\>",
            "spaces": " \t", "titles": "[a](https://x/ '", "unclosed title": "[a](https://x/ '\n",
            "title escapes": '\\"'}
    await shown_as_sent(chat, page, "x")

    def text(name: str, chars: int) -> str:
        if name == "names":
            return worst[name].replace("{}", "".join(f"&n{i + 1_000_000};" for i in range(chars // 8)))
        return worst[name].replace("{}", runs[name] * (chars // len(runs[name])))

    per_render = await render_growth(page, [(name, text(name, 7_800), text(name, 31_200)) for name in worst])
    # Four times the text, four times the time (a little more for the browser): sixteen were it its square.
    assert all(long < 10 * short for _, short, long in per_render), per_render


async def test_a_message_of_long_entity_like_runs_renders_in_time_growing_as_its_length(chat, page) -> None:
    # Each entity reference in text is read where it starts, its name or number bounded: none may read a long run
    # again at each of its characters. The names are looked up once for the whole text, however many its pieces.
    runs = {"names": "", "known": "&amp;", "unclosed": "&#1234567", "long name": "&a" + "b" * 40,
            "pieces": "&amp;*a* "}
    await shown_as_sent(chat, page, "x")

    def text(name: str, chars: int) -> str:
        if name == "names":
            return "".join(f"&n{i + 1_000_000};" for i in range(chars // 10))
        return runs[name] * (chars // len(runs[name]))

    per_render = await render_growth(page, [(name, text(name, 7_800), text(name, 31_200)) for name in runs])
    # Four times the text, four times the time (a little more for the browser): sixteen were it its square.
    assert all(long < 10 * short for _, short, long in per_render), per_render


async def test_a_message_of_long_emphasis_like_runs_renders_in_time_growing_as_its_length(chat, page) -> None:
    # Each `_` or `__` opening no emphasis read on to the end of its line for a closer, in time growing as the
    # square of the line: " _a" 10,000 times took 0.65 s to render, the page frozen meanwhile. The mixed runs
    # close some styles; in the others, each opener has no closer.
    runs = [" _a", " _a<", " __a", "_a* ", "\u00e9_a ", "\u00e9_a_", " *a", " **a", " ***a", " ~~a", "_a_ _", " *a `",
            " **a *b*", "~~a _b *c **d ", "_a **b ~~c "]
    await shown_as_sent(chat, page, "x")

    def text(run: str, chars: int) -> str:
        return (run * -(-chars // len(run)))[:chars]

    per_render = await render_growth(page, [(run, text(run, 7_800), text(run, 31_200)) for run in runs])
    # Four times the text, four times the time (a little more for the browser): sixteen were it its square.
    assert all(long < 10 * short for _, short, long in per_render), per_render


async def test_a_message_of_long_backtick_runs_renders_in_time_growing_as_its_length(chat, page) -> None:
    # Each run of backticks finds the next run as long, or that none follows, in an index of the runs by length:
    # read on from each run opening nothing, runs of growing length (each opening nothing) or "\``a" again and
    # again (a run of one after each escape, and no run of one) would be read to the end again and again. In
    # emphasis and links' texts too, and across lines but not across blank lines.
    runs = ["`a", "``a`", "\\``a", "\\``", " *a `` ", "[a `` ", "`a\n", "`a\n\n", "**a *b ``"]
    await shown_as_sent(chat, page, "x")

    def text(run: str, chars: int) -> str:
        if run == "growing":
            grown, k = "", 1  # no two runs as long: none closes another
            while len(grown) + k + 3 <= chars:
                grown += "`" * k + " a "
                k += 1
            return grown + "a" * (chars - len(grown))
        return (run * -(-chars // len(run)))[:chars]

    per_render = await render_growth(page, [(run, text(run, 7_800), text(run, 31_200)) for run in runs + ["growing"]])
    # Four times the text, four times the time (a little more for the browser): sixteen were it its square.
    assert all(long < 10 * short for _, short, long in per_render), per_render


async def test_a_long_heading_of_spaces_then_text_renders_as_fast_as_a_paragraph(chat, page) -> None:
    # The pattern dropping a heading's closing #s tried each space of the run in turn, in time growing as
    # its square: a second for a message of the most a page may send, the page frozen meanwhile.
    heading = "# a" + " " * 31_993 + "b ##"
    mine = await shown_as_sent(chat, page, heading)
    assert await mine.evaluate(SHAPE) == ["h1", "/h1"] == gateway_shape(heading)
    assert await mine.text_content() == "a" + " " * 31_993 + "b" == gateway_paragraphs(heading)
    # Timed against the same text as a paragraph, in the same page: what is not the heading's own work.
    # Each the fastest of rounds of many renders (a pause for garbage collection, or for another process,
    # slows one round, not all), enough renders that the clock's steps (0.1 ms) do not count.
    per_render = await page.evaluate("""([heading, paragraph]) => {
      const into = document.createElement("div");
""" + RENDER_TIME + """      let renders = 1;
      while (time(paragraph, renders) * renders < 10) renders *= 2;
      const baseline = time(paragraph, renders);
      return [time(heading, renders, 40 * baseline * renders), baseline];  // a round given up once too slow
    }""", [heading, heading[2:]])
    assert per_render[0] < 20 * per_render[1], per_render
