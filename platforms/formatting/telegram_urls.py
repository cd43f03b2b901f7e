"""Where Telegram ends a web address it links by itself.

Telegram links the web addresses in a message's text itself (a "url" entity), by its own rule, not
Markdown's: TDLib's find_urls (td/telegram/MessageEntity.cpp: match_urls, then fix_url), ported here.
A path runs to a space, a line break, ``<>"«»`` or punctuation of U+2000–U+206F (``…``, ``”``), less
a trailing ``.:;,('?!` ``, and ends before a bracket it did not open; so it takes in a trailing ``_``,
``*`` or ``~``, CJK punctuation and the text after it (``https://x.org，然后``), and the ``b`` of
``https://x.org/a`b` `` (the url then crosses the code and Telegram drops it). A host without a dot
(``localhost``) it does not link at all. A url across an entity the message sets (a link, code) or
astride a quote's edge Telegram drops (merge_new_entities).
"""

from __future__ import annotations

import re
import unicodedata

_PATH_END = ".:;,('?!`"
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f]")
_TAKEN_OUT = re.compile("[\r\u2028-\u202e\u030a\u0333\u033f]")
_DIRECTION_RUN = re.compile("[\u200e\u200f](?=[\u200e\u200f])")
_LOOK_ALIKE = "teiegram.org"
_PAIRS = {"(": 0, "[": 1, "{": 2, ")": 0, "]": 1, "}": 2}
_AFTER_ENTITY = "@#$/"
"""What starts a mention, hashtag, cashtag or bot command, which may run on into an address after it."""


def _url_symbol(c: str) -> bool:
    if "\u2000" <= c <= "\u206f":  # General Punctuation: only joiners and dashes
        return c in "\u200c\u200d" or "\u2010" <= c <= "\u2015"
    return not unicodedata.category(c).startswith("Z")  # TDLib's "Separator": spaces, line separators


def _path_symbol(c: str) -> bool:
    return c not in '\n<>"«»' and _url_symbol(c)


def _domain_symbol(c: str) -> bool:
    if c < "\xc0":
        return c == "." or c == "~" or (c.isascii() and (c.isalnum() or c in "_-"))
    return _url_symbol(c)


def _user_symbol(c: str) -> bool:
    return c not in "\n/[]{}()'`<>\"@«»" and _url_symbol(c)


def _protocol_symbol(c: str) -> bool:
    return c.isalnum() or c in "+-" if c.isascii() else not unicodedata.category(c).startswith("Z")


def _word(c: str) -> bool:
    return c == "_" or unicodedata.category(c)[0] in "LN"


def taken_out(text: str) -> str:
    """``text`` less what Telegram takes out of a message before it looks for addresses (clean_input_string):
    line and paragraph separators, direction embeddings and overrides, three combining marks; so an address
    before a paragraph separator runs on into the next word."""
    return _TAKEN_OUT.sub("", text)


def candidates(text: str) -> dict[int, int]:
    """TDLib's match_urls: where each address Telegram reads in ``text`` (`taken_out` already) starts, and
    where it ends."""
    # As Telegram has them before it looks: controls are spaces (clean_input_string), and of a run of
    # direction marks all but the last zero-width non-joiners, which an address takes in
    # (replace_offending_characters).
    text = _DIRECTION_RUN.sub("\u200c", _CONTROL.sub(" ", text))
    found: dict[int, int] = {}
    begin, n = 0, len(text)
    while (dot := text.find(".", begin)) != -1 and dot + 1 < n:
        if text[dot + 1] == " ":
            begin = dot + 2
            continue
        start = dot
        while start > begin and _domain_symbol(text[start - 1]):
            start -= 1
        end, at = dot, -1
        while end < n and (text[end] == "@" or _domain_symbol(text[end])):
            at = end if text[end] == "@" else at
            end += 1
        if at != -1:
            while start > begin and _user_symbol(text[start - 1]):
                start -= 1
        if end < n and text[end] == ":":
            digits = end + 1
            while digits < n and "0" <= text[digits] <= "9":
                digits += 1
            port = text[end + 1:digits].lstrip("0")
            if port and len(port) <= 5 and int(port) <= 65535:
                end = digits
        if end < n and text[end] in "/?#":
            path = end + 1
            while path < n and _path_symbol(text[path]):
                path += 1
            while path > end + 1 and text[path - 1] in _PATH_END:
                path -= 1
            if text[end] == "/" or path > end + 1:
                end = path
        while end > dot + 1 and text[end - 1] == ".":
            end -= 1
        bad = False
        if start != begin and text[start - 1] == "@":
            user = start - 1
            while user > begin and _user_symbol(text[user - 1]):
                user -= 1
            bad = at != -1 or user == start - 1
            start = user
        if start != begin:
            prefix = text[begin:start]
            if len(prefix.encode()) >= 6 and prefix.endswith("://"):
                first = start - 3
                while first > begin and _protocol_symbol(text[first - 1]):
                    first -= 1
                protocol = text[first:start - 3].encode().lower()
                if protocol.endswith(b"http") and protocol != b"shttp":
                    start -= 7
                elif protocol.endswith(b"https"):
                    start -= 8
                elif protocol.endswith(b"ftp") and protocol not in (b"tftp", b"sftp"):
                    start -= 6
                elif protocol.endswith(b"tonsite"):
                    start -= 10
                else:
                    bad = True
            elif _word(prefix[-1]) or prefix[-1] in "/#@":
                bad = True
        if not bad:
            if end > dot + 1:
                found[start] = end
            while end < n and text[end] == ".":
                end += 1
        else:
            while text[end - 1] != ".":
                end -= 1
        begin = max(end, dot + 1)
    return found


def _domain_and_path(url: str) -> tuple[str, str]:
    rest = url[url.find(":") + 3:]
    domain_end = min((i for i in map(rest.find, "/?#") if i != -1), default=len(rest))
    domain, path = rest[:domain_end], rest[domain_end:]
    domain = domain.partition("@")[2] or domain.partition("@")[0]
    return domain[:domain.rfind(":")] if ":" in domain else domain, path


def refused(url: str) -> bool:
    """Whether Telegram refuses to link ``url`` whatever form it takes: a look-alike of its own domain, which no
    link to itself should get around."""
    return _domain_and_path(url)[0].lower() == _LOOK_ALIKE


def fixed(url: str) -> str:
    """TDLib's fix_url for an address with its scheme: the part Telegram links ("" for none)."""
    domain, path = _domain_and_path(url)
    if domain.lower() == _LOOK_ALIKE:
        return ""
    balance, kept = [0, 0, 0], len(path)
    for i, c in enumerate(path):
        if c in _PAIRS:
            balance[_PAIRS[c]] += 1 if c in "([{" else -1
            if min(balance) < 0:
                kept = i
                break
    while kept and path[kept - 1] in _PATH_END:
        kept -= 1
    url = url[:len(url) - len(path) + kept]
    labels = domain.split(".")
    if any(not label or len(label.encode()) >= 64 or label.endswith("-") for label in labels) or len(labels) == 1:
        return ""
    if len(labels) == 4 and all(label.isascii() and label.isdigit() and len(label) <= 3 and int(label) <= 255
                                and (label == "0" or not label.startswith("0")) for label in labels):
        return url  # an IPv4 address
    tld = labels[-1]
    if all(label.isascii() and label.isdigit() for label in labels) or len(tld) <= 1:
        return ""
    if tld.startswith("xn--"):
        if len(tld) <= 5 or not (tld[4:].isascii() and tld[4:].isalnum()):
            return ""
    elif "_" in tld or "-" in tld:
        return ""
    return "" if "_" in labels[-2] else url


def linked_as_is(text: str, start: int, end: int, found: dict[int, int]) -> bool:
    """Whether Telegram links ``text[start:end]``, an address written in ``text``, and only it."""
    if start not in found or fixed(text[start:found[start]]) != text[start:end]:
        return False
    before = start
    while before > 0 and _word(text[before - 1]):
        before -= 1
    return before == 0 or text[before - 1] not in _AFTER_ENTITY
