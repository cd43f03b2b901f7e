"""split_text: limits by the platform's measure, readable cut points, code fences, inline styles, links and
tables kept whole, round trips."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.fakes._telegram_html import parse_html
from platforms.formatting import discord_markdown, markdown, telegram_html
from platforms.telegram import TelegramAdapter

FENCE_LINE = re.compile(r"^ {0,3}`{3,}[^`\n]*$", re.MULTILINE)


def content(text: str) -> str:
    """What a reader gets: no fence lines (added or original), no whitespace."""
    return re.sub(r"\s+", "", FENCE_LINE.sub("", text))


def fences_balanced(part: str) -> bool:
    return len(FENCE_LINE.findall(part)) % 2 == 0


def well_paired(part: str) -> bool:
    """No high surrogate without its low half after it, and no low one alone."""
    i = 0
    while i < len(part):
        c = part[i]
        if "\ud800" <= c <= "\udbff":
            if i + 1 >= len(part) or not "\udc00" <= part[i + 1] <= "\udfff":
                return False
            i += 2
            continue
        if "\udc00" <= c <= "\udfff":
            return False
        i += 1
    return True


# --- examples -------------------------------------------------------------------------


def test_empty_and_blank_text_give_no_parts():
    assert split_text("", 10) == []
    assert split_text(" \n\n \t", 10) == []


def test_text_that_fits_is_returned_unchanged():
    assert split_text("  hello\n\n world ", 100) == ["  hello\n\n world "]


def test_prefers_paragraphs_then_lines_then_spaces_then_hard_cuts():
    assert split_text("aaaa bbbb\ncccc\n\ndddd", 15) == ["aaaa bbbb\ncccc", "dddd"]
    assert split_text("aaaa bbbb\ncccc dddd", 15) == ["aaaa bbbb", "cccc dddd"]
    assert split_text("aaaa bbbb cccc", 10) == ["aaaa bbbb", "cccc"]
    assert split_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_cut_inside_code_closes_and_reopens_the_fence_keeping_indentation():
    text = "Intro.\n\n```python\ndef f():\n    return 1\n\ndef g():\n    return 2\n```\nOutro."
    parts = split_text(text, 44)
    assert parts == [
        "Intro.\n\n```python\ndef f():\n    return 1\n```",
        "```python\ndef g():\n    return 2\n```\nOutro.",
    ]
    assert all(len(p) <= 44 for p in parts)


def test_a_code_block_in_a_list_item_is_closed_and_reopened_at_its_own_indentation():
    # Closed in the first column, the fence ended the list item instead, and the closing line opened
    # an empty code block shown after the code; reopened there, the code lines kept the item's indent.
    steps = "".join(f"   echo step {i}\n" for i in range(12))
    text = f"1. Install:\n   ```bash\n{steps}   ```\n2. Run it."
    parts = split_text(text, 120)
    assert len(parts) > 1
    for part in parts:
        code = [t for t in markdown.parse(part) if t.type == "fence"]
        assert [t.info for t in code] == ["bash"]
        assert re.fullmatch(r"(echo step \d+\n)+", code[0].content)
    assert "".join(t.content for p in parts for t in markdown.parse(p) if t.type == "fence") == steps.replace("   ", "")


def test_a_part_starting_at_a_list_items_code_block_drops_the_items_indentation_from_its_code():
    # The cut drops the fence's indentation as whitespace: opened in the first column, the block kept
    # the item's three spaces on every code line, which the user copied (Python: "unexpected indent").
    code = "if ready:\n    start()\nelse:\n    wait()\n"
    text = "1. First, a paragraph long enough to end the part on its own.\n\n   ```python\n" + "".join(
        f"   {line}\n" for line in code.splitlines()) + "   ```\n"
    parts = split_text(text, 100)
    assert len(parts) == 2
    assert [t.content for t in markdown.parse(parts[1]) if t.type == "fence"] == [code]


def test_a_code_block_in_a_nested_list_item_is_reopened_as_code():
    # Four spaces in, the fence was not known as one: the next part showed the rest of the code as
    # paragraphs (Markdown in it read as such) and its closing fence as text.
    steps = "".join(f"     echo *step* {i}\n" for i in range(30))
    text = f"1. Setup\n   - Install:\n     ```bash\n{steps}     ```\n   - Done\n2. Run it."
    parts = split_text(text, 150)
    assert len(parts) > 2
    for part in parts:
        code = [t for t in markdown.parse(part) if t.type == "fence"]
        assert [t.info for t in code] == ["bash"]
        assert re.fullmatch(r"(echo \*step\* \d+\n)+", code[0].content)
    assert "".join(t.content for p in parts for t in markdown.parse(p) if t.type == "fence") == steps.replace("     ", "")
    assert "Done" in parts[-1] and "Run it." in parts[-1]
    # A part that starts at such a fence's opening line opens it in the first column too.
    text = "Setup:\n\n- Install\n  - on Linux:\n    ```bash\n    apt install pkg\n    ```\n- Run"
    assert split_text(text, 40) == ["Setup:\n\n- Install\n  - on Linux:", "```bash\napt install pkg\n```", "- Run"]


def test_a_part_starting_inside_a_list_item_keeps_the_items_later_paragraphs_out_of_code():
    # Without its item's marker, a later paragraph indented to the item's text (four spaces under
    # "1. ", as models often write it, or five under a nested "- ") was indented code: prose shown as
    # a code block, its `code` and **bold** as typed.
    long = " ".join(f"word{i}" for i in range(60))
    text = (f"1. **Install the tool.** {long}\n\n    Then check it with `tool --version`.\n\n"
            f"2. Configure it:\n   - Set the **port**. {long}\n\n     Restart it with `tool restart`.\n\n"
            f"     Then look at the log.\n3. Done.")
    parts = split_text(text, 200)
    assert len(parts) > 3
    for part in parts:
        assert not [t for t in markdown.parse(part) if t.type in ("code_block", "fence")], part
    spans = [c.content for p in parts for t in markdown.parse(p) if t.type == "inline"
             for c in t.children or () if c.type == "code_inline"]
    assert spans == ["tool --version", "tool restart"]
    assert content("".join(parts)) == content(text)


def test_the_next_numbered_item_after_a_parts_start_still_opens_a_list():
    # Right after the text of the item the part started in, "10." could not open a list (CommonMark:
    # only a 1 interrupts a paragraph): it was a line of that paragraph, and its own later paragraph,
    # four spaces in, indented code.
    long = " ".join(f"word{i}" for i in range(60))
    text = f"Steps:\n\n9. Prepare: {long}\n10. Configure it.\n\n    Edit the **file**.\n11. Done."
    parts = split_text(text, 200)
    assert len(parts) > 1
    assert "10. Configure it." in parts[-1]
    tokens = markdown.parse(parts[-1])
    assert not [t for t in tokens if t.type in ("code_block", "fence")]
    assert [t.attrGet("start") for t in tokens if t.type == "ordered_list_open"] == [10]
    assert content("".join(parts)) == content(text)


def test_a_code_block_in_a_nested_list_item_after_a_parts_start_stays_a_code_block():
    # Five spaces in, the whole block, its fences and the item's later paragraph were indented code in
    # a part that started in the item's text, and a part ending inside it closed it as far in.
    long = " ".join(f"w{i}" for i in range(60))
    steps = "".join(f"     echo step {i}\n" for i in range(30))
    text = f"1. Setup\n   - Install: {long}\n\n     ```bash\n{steps}     ```\n\n     Done.\n2. Run it."
    for limit in (230, 260, 400):
        parts = split_text(text, limit)
        code = [t for p in parts for t in markdown.parse(p) if t.type in ("code_block", "fence")]
        assert [t.type for t in code] == ["fence"] * len(code) and all(t.info == "bash" for t in code)
        assert "".join(t.content for t in code) == steps.replace("     ", "")
        assert [t for t in markdown.parse(parts[-1]) if t.type == "inline" and t.content.startswith("Done.")]


def test_indented_code_cut_at_a_line_stays_code_with_its_lines_as_indented():
    # The cut dropped the next line's four spaces as whitespace: the rest of the code was a paragraph,
    # its `*` and `_` read as styles, its lines run together.
    lines = [f"    if x_{i}:\n        y = a * {i}\n" for i in range(20)]
    text = "Run this:\n\n" + "".join(lines) + "\nDone."
    parts = split_text(text, 200)
    assert len(parts) > 2
    for part in parts:
        kinds = [t.type for t in markdown.parse(part) if t.type in ("code_block", "paragraph_open")]
        assert kinds in (["paragraph_open", "code_block"], ["code_block"], ["code_block", "paragraph_open"])
    code = "".join(t.content for p in parts for t in markdown.parse(p) if t.type == "code_block")
    assert code == "".join(line.replace("    ", "", 1).replace("\n    ", "\n", 1) for line in lines)
    # Cut at the blank line before the block: the next part starts with the block's first line, indented.
    assert split_text("x" * 150 + "\n\n    code line\n    more", 160) == ["x" * 150, "    code line\n    more"]


def test_indented_code_cut_inside_a_line_is_indented_again_in_the_next_part():
    text = "Run this:\n\n    " + " ".join(f"w{i}" for i in range(100))
    parts = split_text(text, 120)
    assert len(parts) > 2 and all(len(p) <= 120 for p in parts)
    code = [[t.content for t in markdown.parse(p) if t.type == "code_block"] for p in parts]
    assert all(len(c) == 1 for c in code)
    assert " ".join(c[0].strip() for c in code) == " ".join(f"w{i}" for i in range(100))


def test_a_cut_never_lands_inside_a_fence_line():
    text = "x" * 10 + "\n```javascript\n" + "y" * 5 + "\n```"
    for part in split_text(text, 24):
        assert fences_balanced(part)
        assert "```javas\n" not in part


def test_telegram_counts_utf16_units():
    text = "😀" * 10  # one str character each, two UTF-16 units
    parts = split_text(text, 5, utf16_length)
    assert parts == ["😀😀"] * 5


def test_surrogate_pairs_are_never_separated():
    pair = "\ud83d\ude00"  # a JSON "\ud83d\ude00" decoded without joining the halves
    parts = split_text(pair * 5, 3)
    assert parts == [pair, pair, pair, pair, pair]


@pytest.mark.parametrize(
    ("cluster", "limit"),
    [
        ("👨\u200d👩\u200d👧\u200d👦", 105),  # a family: four people joined by zero-width joiners
        ("🇩🇪", 51),  # a flag: two regional indicators
        ("👍🏽", 42),  # a thumb and its skin tone
        ("e\u0301", 101),  # e and a combining acute accent
        ("क्षि", 102),  # a Devanagari conjunct with its vowel sign
        ("\u1112\u1161\u11ab", 101),  # 한 spelled as three jamo: leading, vowel, trailing
        ("#\ufe0f\u20e3", 101),  # a keycap: an ASCII sign, a variation selector, the enclosing keycap
    ],
)
def test_a_hard_cut_never_splits_what_a_reader_sees_as_one_character(cluster, limit):
    text = cluster * 80  # no space or line break: every cut is a hard cut
    parts = split_text(text, limit, utf16_length)
    assert len(parts) > 1
    assert all(utf16_length(p) <= limit for p in parts)
    assert all(len(p) % len(cluster) == 0 and p == cluster * (len(p) // len(cluster)) for p in parts)
    assert "".join(parts) == text


def test_a_cluster_longer_than_a_part_is_still_cut_between_code_points():
    zalgo = "a" + "\u0301" * 50
    parts = split_text(zalgo, 20)
    assert "".join(parts) == zalgo and all(len(p) <= 20 for p in parts)


def test_a_limit_too_small_for_one_character_is_an_error():
    with pytest.raises(ValueError):
        split_text("😀😀", 1, utf16_length)
    with pytest.raises(ValueError):
        split_text("abc", 0)


def test_unclosed_fence_is_closed_in_earlier_parts_and_left_as_written_in_the_last():
    text = "```sh\n" + "echo hi\n" * 10
    parts = split_text(text, 30)
    assert all(p.startswith("```sh\n") for p in parts)
    assert all(p.endswith("\n```") for p in parts[:-1])
    assert not parts[-1].endswith("```")


def test_100kb_splits_fast():
    text = ("Lorem ipsum dolor sit amet, consectetur. " * 30 + "\n") * 80 + "```\n" + "x = 1\n" * 2000 + "```\n"
    text += "z" * 20_000
    started = time.process_time()  # this process's CPU: a loaded machine stretches the wall clock, not this
    parts = split_text(text, 4096, utf16_length)
    assert time.process_time() - started < 0.5
    assert all(utf16_length(p) <= 4096 for p in parts)
    assert content("\n".join(parts)) == content(text)


SECTION = ("## Step {}: **configure** the `service` _carefully_\n\nThe **first** thing is the *timeout* of "
           "`connect()`: see [the docs](https://example.com/d) and https://example.com/c_1 first.\n\n"
           "- **A**: set `t=10` in *config*\n- **B**: pass `--t 10`\n\n```python\nx = connect()\n\ny = 1\n```\n\n"
           "| a | **b** |\n|---|---|\n| `1` | [2](https://example.com/2) |\n\n> **Note:** _first_ start is slow.\n\n")


def counting_parses(monkeypatch) -> list[int]:
    """The length of every text handed to markdown-it whole, from now on."""
    parsed: list[int] = []
    monkeypatch.setattr(markdown, "parse", lambda text, *refs, parse=markdown.parse: parsed.append(len(text))
                        or parse(text, *refs))
    return parsed


def test_a_long_reply_heavy_with_formatting_is_parsed_a_few_times_over_not_once_per_candidate_cut(monkeypatch):
    # Each candidate part used to be parsed and rendered whole: about 2 s for this reply, some 25 times
    # its length parsed. Counted in characters handed to markdown-it, not timed (a loaded machine).
    parsed = counting_parses(monkeypatch)
    text = "".join(SECTION.format(i) for i in range(30_000 // len(SECTION)))  # each run new: nothing remembered
    parts = split_text(text, 4096, TelegramAdapter("123:token").measure)
    assert len(parts) > 5
    assert sum(parsed) < 5 * len(text), sum(parsed) / len(text)


@pytest.mark.parametrize("extra", ["Read [the docs][d{}] again.\n\n", "Declare `counts[key]: int` first.\n\n"],
                         ids=["reference links", "a ]: in code"])
def test_a_reply_with_link_definitions_or_a_bracket_colon_is_parsed_a_few_times_over_too(monkeypatch, extra):
    # A text with "]:" anywhere was rendered whole for every candidate, as a definition changes links
    # everywhere (and each part carrying definitions has one): some 25 times its length parsed, 7 s on Telegram.
    parsed = counting_parses(monkeypatch)
    section = SECTION + extra
    text = "".join(section.format(i, i % 5) for i in range(30_000 // len(section)))
    text += "".join(f"[d{i}]: https://example.com/docs/{i}\n" for i in range(5))
    parts = split_text(text, 4096, TelegramAdapter("123:token").measure)
    assert len(parts) > 5
    assert sum(parsed) < 5 * len(text), sum(parsed) / len(text)
    if "[d" in extra:
        shown = [parse_html(telegram_html.render(p)) for p in parts]
        links = [e["url"] for _, entities in shown for e in entities if "/docs/" in e.get("url", "")]
        assert links == [f"https://example.com/docs/{i % 5}" for i in range(30_000 // len(section))]


def test_a_reply_with_a_definition_per_section_is_parsed_a_few_times_over(monkeypatch):
    # Every candidate part was parsed whole once more for its definitions (they apply to every run), and
    # each run with a link rendered again whenever the candidate's definitions grew: 30 times its length
    # parsed, a second of CPU for 30 KB on Telegram. Counted, all of markdown-it's parses, not timed.
    parsed: list[int] = []
    parse = MarkdownIt.parse
    monkeypatch.setattr(MarkdownIt, "parse", lambda md, src, env=None: parsed.append(len(src)) or parse(md, src, env))
    section = SECTION + "Read [the docs][d{}] again.\n\n"
    sections = 30_000 // len(section)
    text = "".join(section.format(i, i) for i in range(sections))
    text += "".join(f"[d{i}]: https://example.com/docs/{i}\n" for i in range(sections))
    parts = split_text(text, 4096, TelegramAdapter("123:token").measure)
    assert len(parts) > 5
    assert sum(parsed) < 10 * len(text), sum(parsed) / len(text)
    shown = [parse_html(telegram_html.render(p)) for p in parts]
    links = [e["url"] for _, entities in shown for e in entities if "/docs/" in e.get("url", "")]
    assert links == [f"https://example.com/docs/{i}" for i in range(sections)]


@pytest.mark.parametrize("text", ["```\n" + " " * 50_000 + "x\n```", "x " * 50_000, "\n" * 50_000 + "y" * 5000])
def test_long_whitespace_runs_split_fast(text):
    started = time.process_time()  # CPU, as above
    parts = split_text(text, 4096)
    assert time.process_time() - started < 0.5
    assert all(len(p) <= 4096 for p in parts)


# --- properties -----------------------------------------------------------------------

_word = st.text(alphabet=st.sampled_from("abcxyz0129éß中文😀🎉"), min_size=1, max_size=12)
_sep = st.sampled_from([" ", " ", " ", "\n", "\n\n", "  ", "\n\n\n"])
_prose = st.lists(st.tuples(_word, _sep), max_size=40).map(lambda ws: "".join(w + s for w, s in ws))
_code_line = st.text(alphabet=st.sampled_from("ab(){} =1😀\t"), max_size=30)
_code = st.tuples(st.sampled_from(["", "python", "js"]), st.lists(_code_line, max_size=15)).map(
    lambda c: f"\n```{c[0]}\n" + "".join(line + "\n" for line in c[1]) + "```\n"
)
_doc = st.lists(st.one_of(_prose, _code), max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_doc, limit=st.integers(min_value=16, max_value=300), utf16=st.booleans())
def test_parts_fit_balance_fences_and_keep_all_content(text, limit, utf16):
    measure = utf16_length if utf16 else len
    parts = split_text(text, limit, measure)
    assert all(measure(p) <= limit for p in parts)
    assert all(p.strip() for p in parts)
    assert all(fences_balanced(p) for p in parts)
    assert content("\n".join(parts)) == content(text)
    if measure(text) <= limit and text.strip():
        assert parts == [text]


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(st.sampled_from(["a", " ", "\n", "\ud83d\ude00", "\udbff\udfff", "```\n"]), max_size=80),
    limit=st.integers(min_value=2, max_value=40),
)
def test_surrogate_pairs_survive_any_cut(chunks, limit):
    text = "".join(chunks)
    parts = split_text(text, limit)
    assert all(len(p) <= limit for p in parts)
    assert all(well_paired(p) for p in parts)
    # A backslash keeps a "```" a part starts with within a line from opening a code block.
    assert re.sub(r"[\s`\\]", "", "".join(parts)) == re.sub(r"[\s`]", "", text)


# --- Markdown structure: styles, links, tables ----------------------------------------------


def test_a_style_open_at_a_cut_is_closed_and_reopened():
    text = "Intro words here. **This bold sentence runs across the cut** and *italic words too* end."
    parts = split_text(text, 40)
    assert parts == [
        "Intro words here. **This bold sentence**",
        "**runs across the cut** and *italic*",
        "*words too* end.",
    ]


def test_inline_code_and_strikethrough_are_reopened_too():
    assert split_text("aa `code span that is long` ~~struck through words~~", 20) == [
        "aa `code span that`", "`is long` ~~struck~~", "~~through words~~"]


def test_links_are_never_cut():
    text = "See [the documentation page](https://example.com/docs/page) for more, and more."
    link = "[the documentation page](https://example.com/docs/page)"
    for limit in range(len(link), len(text)):
        assert any(link in part for part in split_text(text, limit)), limit


def test_a_bare_url_is_never_cut_nor_read_as_styles():
    # Its underscores are no italics: a cut inside it would add markers to the address.
    url = "https://example.com/_docs_/page_(2)"
    text = "x" * 30 + f"({url}) and more"
    for limit in range(len(url), len(text)):
        parts = split_text(text, limit)
        assert any(url in part for part in parts) and "".join(parts).count("_") == url.count("_"), limit


def test_no_cut_lands_inside_a_marker():
    # A hard cut would fall between the two asterisks of the closing marker.
    parts = split_text("**abcdefghij** klm", 13)
    assert all(p.count("*") % 2 == 0 for p in parts)
    assert content("".join(parts)).replace("*", "") == "abcdefghijklm"


@pytest.mark.parametrize("text", ["*" * 4000 + "a" + "*" * 4000, "*a " * 3000 + "b" + " a*" * 3000,
                                  "~~" * 3000 + "a" + "~~" * 3000], ids=["bold", "italic", "struck"])
def test_thousands_of_open_styles_are_not_carried_into_every_part(text):
    # Each part reopened every style open at its cut and closed them all at its end: the markers left a
    # few hundred characters of text a part, 1,860 messages flooding the chat for "*" * 4000 + "a" + ...
    measured = []

    def measure(part: str) -> int:
        measured.append(len(part))
        return len(part)

    started = time.process_time()  # CPU, as above: matching each style's markers was quadratic in their nesting
    parts = split_text(text, 4096, measure)
    # 0.15 s for the italic case here, 0.64 s once in a CI run (the process's other threads count too);
    # quadratic, 3,000 styles took several seconds.
    assert time.process_time() - started < 1.5
    assert len(parts) <= len(text) // 4096 + 2
    assert sum(measured) <= 30 * len(text)  # the work done: a few measures of a part's size per part
    # A backslash keeps a part of stars alone from being a rule.
    assert re.sub(r"[*~\\]", "", content("".join(parts))) == re.sub(r"[*~]", "", content(text))


def test_invisible_characters_alone_are_no_text_and_no_part():
    # Telegram refuses a message of zero-width spaces, no-break spaces and the like as empty.
    assert split_text("\u200b\u00a0 \ufeff", 10) == []
    assert split_text("abc\n\n\u200b\u2003\n\ndef", 5) == ["abc", "def"]


def test_reference_style_links_stay_links_in_every_part():
    # Each part is rendered on its own: without the definitions, written once at the end, every part but
    # the last showed "[the docs][d1]" as typed, and a part holding only definitions rendered empty.
    body = "".join(f"Step {i} is in [the docs][d{i % 3}], with more words to fill the line.\n\n" for i in range(30))
    text = body + "".join(f"[d{i}]: https://example.com/docs/{i}\n" for i in range(3))
    parts = split_text(text, 500, telegram_measure)
    assert len(parts) > 3
    assert all(telegram_measure(p) <= 500 for p in parts)
    shown = [parse_html(telegram_html.render(p)) for p in parts]
    assert all(visible.strip() and "[" not in visible for visible, _ in shown)
    links = [e["url"] for _, entities in shown for e in entities if e["type"] == "text_link"]
    assert links == [f"https://example.com/docs/{i % 3}" for i in range(30)]


@pytest.mark.parametrize(("limit", "measure"), [(4096, TelegramAdapter("123:token").measure), (2000, len)],
                         ids=["telegram", "webhook"])
def test_a_part_carries_only_the_link_definitions_it_uses(limit, measure):
    # Every part carried all 60 definitions, 5,600 characters of Markdown: more than the limit, so the reply
    # could not be split at all ("limit 4096 cannot hold the character at 0").
    body = "".join(f"Step {i} is in [the docs][d{i}], " + "with more words to fill the line. " * 4 + "\n\n"
                   for i in range(60))
    text = body + "".join(f"[d{i}]: https://example.com/{'x' * 60}/{i:04d}\n" for i in range(60))
    parts = split_text(text, limit, measure)
    assert all(measure(p) <= limit for p in parts)
    assert len(parts) <= 2 * len(body) // limit + 1
    shown = [parse_html(telegram_html.render(p)) for p in parts]
    links = [e["url"] for _, entities in shown for e in entities if e["type"] == "text_link"]
    assert links == [f"https://example.com/{'x' * 60}/{i:04d}" for i in range(60)]


def test_the_last_part_fits_as_sent_not_only_as_measured_with_room_for_a_closing_fence():
    # The last part was measured with a closing fence after it, in case a code block stayed open: that
    # fence made the definitions added after it code, so the table's reference links were measured unread,
    # and sent read they took a column of addresses: 3,843 characters of a 2,000 limit, refused by Discord.
    def measure(part: str) -> int:
        return len(discord_markdown.render(part))

    rows = "".join(f"| {i} | see [a] |\n" for i in range(30))
    text = ("See [a] first.\n\n[a]: https://example.com/" + "x" * 60 + "\n\n" + "Intro words here. " * 150
            + "\n\n```\ncode\n```\n\n| k | v |\n|---|---|\n" + rows)
    parts = split_text(text, 2000, measure)
    assert [measure(p) for p in parts if measure(p) > 2000] == []
    assert "".join(parts).count("see [a]") == 30


def test_link_definitions_past_half_the_limit_are_not_carried():
    # A part dense with references to long addresses would otherwise hold a few words and its definitions.
    text = "".join(f"[d{i}] " for i in range(400)) + "\n\n" + "".join(
        f"[d{i}]: https://example.com/{'x' * 200}/{i}\n" for i in range(400))
    parts = split_text(text, 2000)
    assert len(parts) <= 2 * len(text) // 2000 + 1
    assert all(len(p) <= 2000 for p in parts)


def test_a_table_is_cut_between_rows_and_repeats_its_header():
    table = "| name | qty |\n|------|-----|\n" + "".join(f"| item{i} | {i} |\n" for i in range(6))
    parts = split_text("Intro\n\n" + table, 60)
    assert parts[0].startswith("Intro\n\n| name | qty |\n|------|-----|\n| item0 | 0 |")
    for part in parts[1:]:
        assert part.startswith("| name | qty |\n|------|-----|\n| item")
    rows = [line for p in parts for line in p.splitlines() if line.startswith("| item")]
    assert rows == [f"| item{i} | {i} |" for i in range(6)]


def test_tilde_fences_are_closed_and_reopened():
    text = "~~~python\n" + "".join(f"x{i} = {i}\n" for i in range(20)) + "~~~"
    parts = split_text(text, 60)
    assert len(parts) > 1
    assert all(p.startswith("~~~python\n") and p.endswith("\n~~~") for p in parts)


def test_parts_fit_a_rendering_measure():
    text = ("Some **bold** and _italic_ with [links](https://example.com/a_b) & `code`.\n\n" * 60
            + "| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 40)
    limit = 500
    parts = split_text(text, limit, telegram_measure)
    assert len(parts) > 3
    assert all(telegram_measure(p) <= limit for p in parts)
    assert [c for p in parts for c in styled(p) if "pre:" not in c[1]] == styled(text.split("| a | b |")[0])
    assert sum(p.count("| 1 | 2 |") for p in parts) == 40  # each body row once; headers repeat


# --- Markdown properties ------------------------------------------------------------------------


def telegram_measure(text: str) -> int:
    return utf16_length(telegram_html.visible_text(telegram_html.render(text)))


def styled(markdown: str) -> list[tuple[str, frozenset[str]]]:
    """Every visible non-space character of ``markdown`` on Telegram, with the entities covering it."""
    text, entities = parse_html(telegram_html.render(markdown))
    units = text.encode("utf-16-le")
    out, offset = [], 0
    for ch in text:
        width = len(ch.encode("utf-16-le")) // 2
        kinds = frozenset(f"{e['type']}:{e.get('url', '')}" for e in entities
                          if e["offset"] <= offset < e["offset"] + e["length"])
        if not ch.isspace():
            out.append((ch, kinds))
        offset += width
    assert offset == len(units) // 2
    return out


_styled_word = st.tuples(
    st.text(alphabet=st.sampled_from("abcxyz019éß中😀"), min_size=1, max_size=8),
    st.sampled_from(["", "**", "*", "_", "~~", "`", "[]"]),
).map(lambda w: f"[{w[0]}](https://x.org/{len(w[0])})" if w[1] == "[]" else f"{w[1]}{w[0]}{w[1]}")
_styled_run = st.lists(_styled_word, min_size=1, max_size=6).map(" ".join)
_styled_span = st.tuples(st.sampled_from(["", "**", "*", "~~"]), _styled_run).map(
    lambda s: f"{s[0]}{s[1]}{s[0]}" if s[0] and "`" not in s[1] and "[" not in s[1] and s[0] not in s[1] else s[1])
_styled_doc = st.lists(st.tuples(_styled_span, _sep), min_size=1, max_size=25).map(
    lambda ws: "".join(w + s for w, s in ws))


@settings(max_examples=200, deadline=None)
@given(text=_styled_doc, limit=st.integers(min_value=30, max_value=200), telegram=st.booleans())
def test_every_visible_character_keeps_its_style_across_parts(text, limit, telegram):
    measure = telegram_measure if telegram else len
    parts = split_text(text, limit, measure)
    assert all(measure(p) <= limit for p in parts)
    assert [c for p in parts for c in styled(p)] == styled(text)
