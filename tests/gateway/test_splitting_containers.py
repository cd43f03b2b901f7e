"""split_text: a code block in a quote, or opened on a list item's marker line, is closed and reopened
where it stands, so every part shows its code as code."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.splitting import split_text
from platforms.base import utf16_length
from platforms.formatting import markdown, telegram_html

# A fence line after any quote or list item markers, and those markers at a line's start.
FENCE_LINE = re.compile(r"^[ >]*(?:(?:[-+*]|\d{1,9}[.)]) +[ >]*)*(?:`{3,}|~{3,})[^\n]*$", re.MULTILINE)
MARKERS = re.compile(r"^[ >]*(?:(?:-|\d{1,9}[.)])(?= |$) *[ >]*)*", re.MULTILINE)


def content(text: str) -> str:
    """What a reader gets: no fence lines (added or original), no quote or list markers, no whitespace."""
    return re.sub(r"\s+", "", MARKERS.sub("", FENCE_LINE.sub("", text)))


def code_blocks(part: str) -> list[tuple[str, str, bool]]:
    """Each code block of ``part``: its language, its code, and whether it is in a quote."""
    tokens = markdown.parse(part)
    quoted = 0
    blocks = []
    for tok in tokens:
        quoted += {"blockquote_open": 1, "blockquote_close": -1}.get(tok.type, 0)
        if tok.type in ("fence", "code_block"):
            blocks.append((tok.info, tok.content, quoted > 0))
    return blocks


CODE = "".join(f"x_{i} = a * {i}\n" for i in range(20))


def test_a_code_block_in_a_quote_is_closed_and_reopened_in_the_quote():
    # The fence was not known as one: the part ending inside it was not closed, the next showed the rest
    # of the code as a quoted paragraph (its `*` read as italics), and the quote's closing fence opened
    # an empty code block.
    text = "Intro.\n\n> Quote:\n> ```py\n" + "".join(f"> {line}\n" for line in CODE.splitlines()) + "> ```\n\nAfter."
    parts = split_text(text, 150)
    assert len(parts) > 2
    for part in parts:
        assert [(lang, quoted) for lang, _, quoted in code_blocks(part)] == [("py", True)], part
    assert "".join(code for part in parts for _, code, _ in code_blocks(part)) == CODE
    assert parts[-1].endswith("> ```\n\nAfter.")
    assert content("\n".join(parts)) == content(text)


def test_a_quoted_code_line_cut_in_two_goes_on_in_the_quote():
    line = " ".join(f"w{i}" for i in range(60))
    text = f"Intro.\n\n> ```\n> {line}\n> ```\n\nAfter."
    parts = split_text(text, 80)
    assert len(parts) > 3
    blocks = [block for part in parts for block in code_blocks(part)]
    assert [quoted for _, _, quoted in blocks] == [True] * len(parts)
    assert " ".join(code.strip() for _, code, _ in blocks) == line


def test_a_code_block_opened_on_a_list_items_marker_line_is_closed_and_reopened_as_far_in():
    # The same, and the block's closing fence, two spaces in, was read as one opening a block.
    for marker, later in (("- ", "- next"), ("1. ", "2. next"), ("10. ", "11. next")):
        pad = " " * len(marker)
        text = f"Intro.\n\n{marker}```py\n" + "".join(f"{pad}{line}\n" for line in CODE.splitlines()) + \
            f"{pad}```\n{later}\n"
        parts = split_text(text, 150)
        assert len(parts) > 2, marker
        for part in parts:
            assert [lang for lang, _, _ in code_blocks(part)] == ["py"], part
        assert "".join(code for part in parts for _, code, _ in code_blocks(part)) == CODE, marker
        tokens = markdown.parse(parts[-1])
        assert [t.content for t in tokens if t.type == "inline"][-1] == "next", parts[-1]
        assert content("\n".join(parts)) == content(text)


def test_a_part_starting_at_a_nested_items_code_block_keeps_its_code_as_written():
    # A part starting at the item's marker drops the spaces before it: the item's code lines lose as many.
    text = "- An item with a paragraph long enough to end a part on its own.\n  - ```py\n" + "".join(
        f"      {line}\n" for line in CODE.splitlines()[:3]) + "    ```\n- b"
    parts = split_text(text, 80)
    assert parts[1].startswith("- ```py\n")
    assert "".join(code for part in parts for _, code, _ in code_blocks(part)) == \
        "".join(f"  {line}\n" for line in CODE.splitlines()[:3])


_word = st.sampled_from(["word", "**bold**", "*it*", "`code`", "x_y"])
_words = st.lists(_word, min_size=1, max_size=8).map(" ".join)
_code = st.lists(st.sampled_from(["x = 1", "  y = a * b", "print(x)", "z_1 = [1, 2]"]), min_size=1, max_size=6)


@st.composite
def _item(draw, marker: str) -> str:
    pad = " " * len(marker)
    kind = draw(st.sampled_from(["plain", "fence", "marker fence", "quote fence", "long quote", "paragraph"]))
    if kind == "marker fence":
        return f"{marker}```py\n" + "".join(f"{pad}{line}\n" for line in draw(_code)) + f"{pad}```\n"
    text = f"{marker}{draw(_words)}\n"
    if kind == "fence":
        return text + f"{pad}```py\n" + "".join(f"{pad}{line}\n" for line in draw(_code)) + f"{pad}```\n"
    if kind == "quote fence":
        return text + f"{pad}> ```py\n" + "".join(f"{pad}> {line}\n" for line in draw(_code)) + f"{pad}> ```\n"
    if kind == "long quote":
        return text + f"{pad}> ```py\n{pad}> " + " ".join(["abc"] * draw(st.integers(10, 60))) + f"\n{pad}> ```\n"
    if kind == "paragraph":
        return text + f"\n{pad}{draw(_words)}\n\n"
    return text


@st.composite
def _list(draw) -> str:
    kind = draw(st.sampled_from(["- ", ". ", ") ", "1. "]))  # bullets, numbered, numbered 1. on every item
    count = draw(st.integers(1, 14))
    return "".join(draw(_item(kind if kind in ("- ", "1. ") else f"{i}{kind}")) for i in range(1, count + 1))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=_list(), limit=st.integers(min_value=60, max_value=400), telegram=st.booleans())
def test_code_in_quotes_and_list_items_stays_code_and_nothing_is_lost(items, limit, telegram):
    def measure(text: str) -> int:
        return utf16_length(telegram_html.visible_text(telegram_html.render(text))) if telegram else len(text)

    text = "Intro words here.\n\n" + items + "\nOutro."
    parts = split_text(text, limit, measure)
    assert all(measure(part) <= limit for part in parts)
    assert content("\n".join(parts)) == content(text)
    blocks = [block for part in parts for block in code_blocks(part)]
    assert {lang for lang, _, _ in blocks} <= {"py"}, parts
    whitespace = re.compile(r"\s")
    assert whitespace.sub("", "".join(code for _, code, _ in blocks)) == \
        whitespace.sub("", "".join(code for _, code, _ in code_blocks(text)))
