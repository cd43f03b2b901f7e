"""split_text and long lists: a part starting further down a numbered list goes on with its numbers,
and a reply that is one long list is rendered a list item at a time, not whole for every candidate."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.parser_inline import ParserInline

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.formatting import blocks, discord_markdown, markdown, slack_mrkdwn, telegram_html
from platforms.formatting.markdown import Context, Renderer
from platforms.telegram import TelegramAdapter

RENDERERS = {"telegram": telegram_html.render, "slack": slack_mrkdwn.render, "discord": discord_markdown.render}


def shown_numbers(rendered: str) -> list[tuple[int, int]]:
    """(number shown, step) for each line ``N. Step S`` of a rendered part."""
    return [(int(n), int(s)) for n, s in re.findall(r"^\s*(\d+)\. \S*Step (\d+)", rendered, re.MULTILINE)]


# --- numbering --------------------------------------------------------------------------------


@pytest.mark.parametrize("platform", list(RENDERERS))
def test_a_list_numbered_1_on_every_item_goes_on_counting_in_later_parts(platform):
    # CommonMark numbers a list from its first item's number on: each later part started at "1." again,
    # so the chat showed 1-3, 1-3, 1-3... for steps 1 to 12.
    text = "Steps:\n\n" + "".join(f"1. **Step {i}**: " + "do the thing " * 4 + "\n" for i in range(1, 13))
    parts = split_text(text, 200)
    assert len(parts) > 3
    shown = [pair for part in parts for pair in shown_numbers(RENDERERS[platform](part))]
    assert shown == [(i, i) for i in range(1, 13)]


def test_a_number_a_column_longer_moves_its_items_lines_in_with_it():
    # "10." for "1." puts the item's text a column further in: its lines, left where they were, would
    # have been a list and a code block of their own, after the item.
    items = "".join(f"1. Step {i}: do it\n   - then check it\n   ```sh\n   run {i}\n   ```\n" for i in range(1, 14))
    for limit in (150, 200, 260):
        parts = split_text("Steps:\n\n" + items, limit)
        for part in (p for p in parts if re.match(r"\d+\. ", p)):  # those starting at an item
            tokens = markdown.parse(part)
            assert [t.type for t in tokens if t.level == 0 and t.nesting == 1] == ["ordered_list_open"], part
            assert all(t.level == 2 for t in tokens if t.type in ("bullet_list_open", "fence")), part
        shown = [int(m) for part in parts for m in re.findall(r"^(\d+)\. Step", telegram_html.render(part), re.M)]
        assert shown == list(range(1, 14))
        fences = [t.content for part in parts for t in markdown.parse(part) if t.type == "fence"]
        assert fences == [f"run {i}\n" for i in range(1, 14)]


def test_the_next_numbered_item_after_a_part_starting_inside_one_still_opens_a_list():
    # Right after the text of the item the part started in, "10." could not open a list (only a 1 can
    # interrupt a paragraph): it was a line of that paragraph, its number and all.
    long = " ".join(f"word{i}" for i in range(60))
    text = f"Steps:\n\n9. Prepare: {long}\n10. Configure it.\n11. Done."
    parts = split_text(text, 200)
    tokens = markdown.parse(parts[-1])
    assert [t.attrGet("start") for t in tokens if t.type == "ordered_list_open"] == [10]
    assert [t.content for t in tokens if t.type == "inline"][-2:] == ["Configure it.", "Done."]


def test_a_list_numbered_as_written_keeps_its_numbers():
    text = "Steps:\n\n" + "".join(f"{i}. Step {i}: " + " ".join(["do the thing"] * 4) + "\n" for i in range(1, 13))
    parts = split_text(text, 200)
    assert len(parts) > 3
    assert "\n".join(parts) == text.strip()


def test_a_numbered_list_in_an_item_left_out_does_not_run_into_that_items_own_list():
    # Both taken out to the first column, the item's sub-steps and its list's next item were one list:
    # step 3 was shown as the sub-steps' next number.
    subs = "".join(f"   1. Sub-step {i}: " + "do the thing " * 3 + "\n" for i in range(1, 4))
    text = "1. Step 1: first\n2. Step 2: " + "words " * 12 + "\n" + subs + "3. Step 3: last\n"
    parts = split_text(text, 140)
    rendered = [telegram_html.render(part) for part in parts]
    last = next(r for r in rendered if "Step 3" in r)
    assert re.search(r"^3\. Step 3", last, re.MULTILINE), rendered
    subs_shown = [int(n) for r in rendered for n in re.findall(r"^\s*(\d+)\. Sub-step", r, re.M)]
    assert subs_shown == [1, 2, 3]


_words = st.lists(st.sampled_from(["word", "**bold**", "*it*", "`code`"]), min_size=1, max_size=8).map(" ".join)


@st.composite
def _numbered(draw) -> tuple[str, int]:
    """A numbered list, "1." on every item or numbered as written, its items tagged S<i> (sub-items N<j>)."""
    lazy, delimiter = draw(st.booleans()), draw(st.sampled_from([".", ")"]))
    count = draw(st.integers(2, 14))
    text = ""
    for i in range(1, count + 1):
        marker = f"{1 if lazy else i}{delimiter} "
        pad = " " * len(marker)
        text += f"{marker}S{i} {draw(_words)}\n"
        kind = draw(st.sampled_from(["plain", "bullets", "numbered", "code", "paragraph"]))
        if kind == "bullets":
            text += "".join(f"{pad}- {draw(_words)}\n" for _ in range(draw(st.integers(1, 3))))
        elif kind == "numbered":
            sub = draw(st.sampled_from([".", ")"]))
            text += "".join(f"{pad}1{sub} N{j} {draw(_words)}\n" for j in range(1, draw(st.integers(1, 8)) + 1))
        elif kind == "code":
            text += f"{pad}```\n{pad}x = {i}\n{pad}```\n"
        elif kind == "paragraph":
            text += f"\n{pad}{draw(_words)}\n\n"
    return "Intro words here.\n\n" + text + draw(st.sampled_from(["", "\n"])) + "\nOutro.", count


def tagged_numbers(part: str) -> list[tuple[str, int]]:
    """(tag, number shown) of each numbered item of ``part`` whose text starts with a tag S<i> or N<j>."""
    tokens = markdown.parse(part)
    counters: list[int | None] = []
    out = []
    for i, tok in enumerate(tokens):
        if tok.type in ("ordered_list_open", "bullet_list_open"):
            counters.append(int(tok.attrGet("start") or 1) if tok.type == "ordered_list_open" else None)
        elif tok.type in ("ordered_list_close", "bullet_list_close"):
            counters.pop()
        elif tok.type == "list_item_open" and counters[-1] is not None:
            number = counters[-1]
            counters[-1] = number + 1
            tag = re.match(r"[SN]\d+", tokens[i + 2].content) if tokens[i + 1].type == "paragraph_open" else None
            if tag is not None:
                out.append((tag.group(), number))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numbered=_numbered(), limit=st.integers(min_value=60, max_value=400), telegram=st.booleans())
def test_every_numbered_item_is_shown_with_its_own_number(numbered, limit, telegram):
    def measure(text: str) -> int:
        return utf16_length(telegram_html.visible_text(telegram_html.render(text))) if telegram else len(text)

    text, count = numbered
    parts = split_text(text, limit, measure)
    assert all(measure(part) <= limit for part in parts)
    shown = [pair for part in parts for pair in tagged_numbers(part)]
    assert [(tag, f"{tag[0]}{number}") for tag, number in shown] == [(tag, tag) for tag, _ in shown], parts
    assert sorted({int(tag[1:]) for tag, _ in shown if tag[0] == "S"}) == list(range(1, count + 1))
    markers = re.compile(r"^ *(?:-|\d{1,9}[.)])(?= )", re.MULTILINE)
    assert re.sub(r"\s+", "", markers.sub("", "\n".join(parts))) == re.sub(r"\s+", "", markers.sub("", text))


# --- cost ------------------------------------------------------------------------------------


def tight_nested_list(size: int) -> str:
    items, i = [], 0
    while sum(map(len, items)) < size:
        i += 1
        items.append(f"{i}. **Step {i}**: configure `service-{i}`, see https://example.com/{i}\n"
                     f"   - set `timeout=10` in *config.yaml* for **every** host\n"
                     f"     - nested: `export TIMEOUT=10`, then [restart](https://example.com/r/{i})\n"
                     f"   - pass `--timeout 10` on the _command line_\n")
    return "".join(items)


def numbered_with_blank_lines(size: int) -> str:
    items, i = [], 0
    while sum(map(len, items)) < size:
        i += 1
        items.append(f"{i}. **Step {i}**: check the *timeout* of `svc-{i}`, see [docs](https://example.com/{i})\n"
                     f"   - set `timeout=10` in *config.yaml*\n   - restart with `systemctl restart svc-{i}`\n\n")
    return "".join(items)


def one_item_holding_all(size: int) -> str:
    items, i = ["- Overview\n"], 0
    while sum(map(len, items)) < size:
        i += 1
        items.append(f"  - sub {i} with **bold** and `code` words\n    continuation {i} with *it*\n"
                     f"    - subsub {i} [link](https://example.com/{i})\n")
    return "".join(items)


@pytest.mark.parametrize("reply", [tight_nested_list, numbered_with_blank_lines, one_item_holding_all])
def test_a_reply_that_is_one_long_list_is_parsed_a_few_times_over_not_once_per_candidate(monkeypatch, reply):
    # A list is one block: each of the fifteen to twenty candidates of a part was rendered whole, 19 to 25
    # times the reply's length parsed, 3 to 5 s for 130 KB on Telegram. Counted, all of markdown-it's
    # parses and what its inline parser reads (paragraphs are parsed inline a piece at a time, apart), not
    # timed (a loaded machine).
    parsed: list[int] = []
    inline: list[int] = []
    parse, parse_inline = MarkdownIt.parse, ParserInline.parse
    monkeypatch.setattr(MarkdownIt, "parse", lambda md, src, env=None: parsed.append(len(src)) or parse(md, src, env))
    monkeypatch.setattr(ParserInline, "parse", lambda self, src, md, env, out: inline.append(len(src)) or
                        parse_inline(self, src, md, env, out))
    text = reply(30_000)
    parts = split_text(text, 4096, TelegramAdapter("123:token").measure)
    assert len(parts) > 5
    assert sum(parsed) < 8 * len(text), sum(parsed) / len(text)
    assert sum(inline) < 8 * len(text), sum(inline) / len(text)


# --- rendering a list an item at a time ----------------------------------------------------------


def whole(renderer: Renderer, text: str) -> str:
    """How every text was rendered before: parsed whole, in one go."""
    tokens = markdown.parse(text)
    return renderer._blocks(tokens, 0, len(tokens), Context()).strip("\n")


def test_a_list_is_cut_into_runs_before_its_items_once_it_ends():
    text = "Intro\n\n1. a\n   - x\n1. b\n1. c\n\nafter\n\n- d\n\n- e\n  more\n\n- f\n\n  g\n- h\n"
    runs = [(run.text, run.continues, run.number, run.loose) for run in blocks.runs(text)]
    assert runs == [("Intro\n\n", False, 1, False), ("1. a\n   - x\n", False, 1, False), ("1. b\n", True, 2, False),
                    ("1. c\n\n", True, 3, False), ("after\n\n", False, 1, False), ("- d\n\n", False, 1, True),
                    ("- e\n  more\n\n", True, 1, True), ("- f\n\n  g\n", True, 1, True), ("- h\n", True, 1, True)]
    # A lazy line, of a paragraph or not: the list is left whole.
    assert blocks.chunks("- a\nlazy\n- b\n") == ["- a\nlazy\n- b\n"]


_inline = st.lists(st.sampled_from(["word", "**b**", "*i*", "`c`", "[l](https://x.org)", "1.", "-", "|", "[r]"]),
                   min_size=1, max_size=4).map(" ".join)
_line = st.one_of(_inline, _inline, st.sampled_from(["```", "~~~", "> q", "# h", "---", "| a | b |", "|---|---|",
                                                     "[r]: /u", "", "- s", "1. s", "1) s", "x"]))


@st.composite
def _list_text(draw) -> str:
    text = draw(st.sampled_from(["", "Intro\n\n", "# T\n\n"]))
    main = draw(st.sampled_from(["- ", "1. ", "1) ", "10. ", "* ", "-   ", "1."]))
    for _ in range(draw(st.integers(1, 12))):
        marker = draw(st.sampled_from([main] * 6 + ["- ", "1. ", "1.", "1) "]))
        text += marker + draw(st.one_of(_inline, _line)) + "\n"
        column = len(marker) if marker.endswith(" ") else len(marker) + 1
        for _ in range(draw(st.integers(0, 3))):
            indent = draw(st.sampled_from([column] * 6 + [column + 2, column + 4, max(column - 1, 0), 0]))
            text += draw(st.sampled_from([""] * 4 + ["\n"])) + " " * indent + draw(_line) + "\n"
        text += draw(st.sampled_from([""] * 6 + ["\n"]))
    return text + draw(st.sampled_from(["", "\nafter\n", "# H\n", "```\ncode\n```\n", "\n- z\n"]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_list_text())
@example(text="- [r]: /u\n- | [r]\n  ---\n")  # a table cell's link read by a definition in another item
def test_rendering_a_list_an_item_at_a_time_gives_the_whole_rendering(text):
    assert "".join(blocks.chunks(text)) == text
    for renderer in (telegram_html._RENDERER, slack_mrkdwn._RENDERER, discord_markdown._RENDERER):
        assert renderer._render(text) == whole(renderer, text)
