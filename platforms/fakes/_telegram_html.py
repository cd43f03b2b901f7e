"""The fake Telegram's ``parse_mode=HTML``: Telegram's HTML subset into text and entities.

It follows what Telegram does: the supported tags are ``b strong i em u ins s
strike del tg-spoiler span(class=tg-spoiler) a(href) code pre blockquote
tg-emoji``; ``&lt; &gt; &amp; &quot;`` and numeric references are decoded, any
other ``&`` is a literal ampersand. A tag it does not support, an end tag that
does not match, a tag left open or one never finished raise `HtmlError` with the
description Telegram gives (``can't parse entities: Unsupported start tag "p" at
byte offset 0``). Entity offsets and lengths are UTF-16 code units. Entities
Telegram cannot nest are dropped as it drops them: anything inside code or pre
(a pre's language comes from its inner ``<code class="language-x">``), a quote
inside a quote, a link inside a link. A link to ``tg://user?id=…`` is a ``text_mention`` of that user (with a
``user`` named ``user<id>``), which pings them. A link goes where Telegram sends it
(`checked_link`): not always where ``href`` says, and nowhere, the text left
unlinked without an error, for an address Telegram cannot read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

TAGS = {
    "b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline", "ins": "underline",
    "s": "strikethrough", "strike": "strikethrough", "del": "strikethrough", "tg-spoiler": "spoiler",
    "span": "spoiler", "a": "text_link", "code": "code", "pre": "pre", "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}  # fmt: skip
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_ENTITY = re.compile(r"&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]+));")
_NAME = re.compile(r"[a-zA-Z0-9-]*")
_KEPT = re.compile(r"(?:https?://|tg:|ton:|tonsite:)", re.IGNORECASE)
_SCHEME = re.compile(r"[^:/?#@\[\]]*://")
_AUTHORITY = re.compile(r"([^/?#]*)(.*)", re.DOTALL)
_URL_PART = re.compile(r"(?:[A-Za-z0-9.\-_!$,~*'();&+=]|%[0-9A-Fa-f]{2}|[^\x00-\x7f])*")
_USER_LINK = re.compile(r"tg:(?://)?user/?\?(?:[^#]*&)?id=(\d+)(?:[&#]|$)", re.IGNORECASE)
"""A link Telegram makes a ``text_mention`` of, the user's id its ``id`` (TDLib's LinkManager::get_link_user_id)."""
_ATTRIBUTE = re.compile(r"\s*([a-zA-Z0-9_-]+)(?:\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+)))?")


class HtmlError(ValueError):
    """Malformed markup; ``str()`` is Telegram's description after ``can't parse entities: ``."""


@dataclass
class _Open:
    tag: str
    offset: int  # UTF-16 units into the text
    order: int  # how many tags opened before this one: an outer tag before an inner one on the same text
    attrs: dict[str, str] = field(default_factory=dict)


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _byte_offset(source: str, i: int) -> int:
    return len(source[:i].encode("utf-8", "surrogatepass"))


def _decode(value: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) or m.group(2):
            code = int(m.group(1)) if m.group(1) else int(m.group(2), 16)
            return chr(code) if 0 < code < 0x110000 else m.group(0)
        return _NAMED.get(m.group(3), m.group(0))

    return _ENTITY.sub(one, value)


def checked_link(href: str) -> str:
    """Where Telegram's link to ``href`` goes; "" when it makes no link of it. As TDLib's
    LinkManager::get_checked_link: http(s), tg and ton links are kept (as sent here; Telegram also
    normalizes them), another ``scheme://`` is dropped, and anything else is read as an http address
    (td/utils/HttpUrl.cpp, parse_url): ``mailto:help@example.com`` is http://mailto:help@example.com/,
    user "mailto:help" on the web site example.com, and ``javascript:alert(1)`` no link, as its "port"
    is no number."""
    if _KEPT.match(href):
        return href
    if _SCHEME.match(href):
        return ""
    authority, rest = _AUTHORITY.fullmatch(href).groups()  # type: ignore[union-attr]
    head, colon, port = authority.rpartition(":")
    if not colon or "@" in port or "]" in port:  # that colon is the user info's, not a port's
        head, port = authority, ""
    elif not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        return ""
    userinfo, _, host = head.rpartition("@")
    if host == "." or "." not in host:
        return ""
    if not (_URL_PART.fullmatch(host) and _URL_PART.fullmatch(userinfo.replace(":", ""))):
        return ""  # "Disallowed character in URL"
    user = f"{userinfo}@" if userinfo else ""
    port = f":{int(port)}" if port else ""
    path = "".join(f"%{ord(c):02X}" if c <= " " else c for c in rest.rstrip())
    return f"http://{user}{host.lower()}{port}{path if path.startswith('/') else '/' + path}"


def parse_html(source: str) -> tuple[str, list[dict[str, Any]]]:
    """The text Telegram shows and its entities; `HtmlError` for markup Telegram refuses."""
    out: list[str] = []
    length = 0  # UTF-16 units in `out`
    stack: list[_Open] = []
    found: list[tuple[_Open, int]] = []
    i, n = 0, len(source)
    while i < n:
        if source[i] != "<":
            j = source.find("<", i)
            j = n if j == -1 else j
            chunk = _decode(source[i:j])
            out.append(chunk)
            length += _utf16(chunk)
            i = j
            continue
        at = _byte_offset(source, i)
        if source.startswith("</", i):
            name = _NAME.match(source, i + 2).group().lower()  # type: ignore[union-attr]
            end = source.find(">", i)
            if end == -1:
                raise HtmlError(f"Unclosed end tag at byte offset {at}")
            if not stack:
                raise HtmlError(f"Unexpected end tag at byte offset {at}")
            if name != stack[-1].tag:
                raise HtmlError(f'Unmatched end tag at byte offset {at}, expected "</{stack[-1].tag}>", '
                                f'found "</{name}>"')  # fmt: skip
            found.append((stack.pop(), length))
            i = end + 1
            continue
        name = _NAME.match(source, i + 1).group().lower()  # type: ignore[union-attr]
        if name not in TAGS:
            raise HtmlError(f'Unsupported start tag "{name}" at byte offset {at}')
        attrs, i = _attributes(source, i + 1 + len(name), at)
        if name == "span" and attrs.get("class") != "tg-spoiler":
            raise HtmlError(f'Tag "span" must have class "tg-spoiler" at byte offset {at}')
        stack.append(_Open(name, length, len(found) + len(stack), attrs))
    if stack:
        raise HtmlError(f'Can\'t find end tag corresponding to start tag "{stack[-1].tag}"')
    return "".join(out), _entities(found)


def _attributes(source: str, i: int, at: int) -> tuple[dict[str, str], int]:
    attrs: dict[str, str] = {}
    while True:
        while i < len(source) and source[i].isspace():
            i += 1
        if i >= len(source):
            raise HtmlError(f"Unclosed start tag at byte offset {at}")
        if source[i] == ">":
            return attrs, i + 1
        m = _ATTRIBUTE.match(source, i)
        if m is None or m.end() == i:
            raise HtmlError(f"Empty attribute name in the tag at byte offset {at}")
        value = next((g for g in m.groups()[1:] if g is not None), "")
        attrs[m.group(1).lower()] = _decode(value)
        i = m.end()


def _entities(found: list[tuple[_Open, int]]) -> list[dict[str, Any]]:
    spans = sorted(((o.offset, end, o) for o, end in found if end > o.offset), key=lambda s: (s[0], -s[1], s[2].order))
    entities: list[dict[str, Any]] = []
    blockers: list[tuple[int, int, str]] = []  # code, pre, quotes and links that hide what they contain
    for start, end, opened in spans:
        kind = TAGS[opened.tag]
        inside = [b for b in blockers if b[0] <= start and end <= b[1]]
        if any(b[2] in ("code", "pre") for b in inside):
            pre = next((e for e in entities if e["type"] == "pre" and (e["offset"], e["offset"] + e["length"])
                        == (start, end)), None)  # fmt: skip
            language = opened.attrs.get("class", "").removeprefix("language-")
            if kind == "code" and pre is not None and language:
                pre["language"] = language
            continue
        if kind in ("blockquote", "text_link") and any(b[2] == kind for b in inside):
            continue
        entity: dict[str, Any] = {"type": kind, "offset": start, "length": end - start}
        if kind == "text_link":
            if not (url := checked_link(opened.attrs.get("href", ""))):
                continue
            if (user := _USER_LINK.match(url)) is not None:  # a mention, which notifies the user
                entity.update(type="text_mention", user={"id": int(user.group(1)), "is_bot": False,
                                                         "first_name": f"user{user.group(1)}"})
            else:
                entity["url"] = url
        if kind == "custom_emoji":
            entity["custom_emoji_id"] = opened.attrs.get("emoji-id", "")
        entities.append(entity)
        if kind in ("code", "pre", "blockquote", "text_link"):
            blockers.append((start, end, kind))
    return entities
