"""Every relative link of README.md and docs/ leads somewhere: to a file that exists and, after a `#`, to a
heading of that page (as GitHub names its anchors). A newcomer follows them from the README first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def unfenced(text: str) -> str:
    # A backtick fence's opening line holds no other backtick (CommonMark): ```` ``` ```` is inline code.
    return re.sub(r"^ *(`{3,}(?=[^`\n]*$)|~{3,}).*?^ *\1[`~]* *$", "", text, flags=re.S | re.M)


def prose(text: str) -> str:
    """The text without code, where `[t](x)` is an example, not a link."""
    return re.sub(r"(`+).+?(?<!`)\1(?!`)", "", unfenced(text), flags=re.S)


def anchors(page: Path) -> set[str]:
    """GitHub's: a heading lower-cased, its punctuation dropped, spaces as `-`; a repeat gets `-1`, `-2`, …"""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", unfenced(page.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        n = 0
        while (anchor := slug if n == 0 else f"{slug}-{n}") in found:
            n += 1
        found.add(anchor)
    return found


def links() -> list:
    found = []
    for page in PAGES:
        for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
            if not re.match(r"[a-zA-Z][\w+.-]*:", target):  # http:, mailto: and the like are not checked here
                found.append(pytest.param(page, target, id=f"{page.relative_to(ROOT)}->{target}"))
    return found


@pytest.mark.parametrize(("page", "target"), links())
def test_a_relative_link_leads_to_a_file_and_a_heading(page, target):
    path, _, anchor = target.partition("#")
    linked = (page.parent / path).resolve() if path else page
    assert linked.exists(), f"{page.relative_to(ROOT)} links to {target}: no such file"
    if anchor and linked.suffix == ".md":
        assert anchor in anchors(linked), f"{page.relative_to(ROOT)} links to {target}: no such heading"
