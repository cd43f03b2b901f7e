"""Splitting a message to a platform's length limit.

`split_text` cuts where a reader would: at a paragraph break, else a line break,
else a space, else anywhere (never between the two halves of a UTF-16 surrogate
pair). A cut inside a ``` code fence closes the fence at the end of the part and
reopens it, with the same info string, at the start of the next, so every part
renders as code on its own. Whitespace at a cut is dropped (inside code, the
indentation of the next line is kept); nothing else is added or removed.

Cost: each part needs O(log part) calls of ``measure`` on text of about the
part's size, so a 100 KB text splits in milliseconds, whatever ``measure`` is,
as long as it grows with the text (every real one does).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

Measure = Callable[[str], int]

# CommonMark backtick fences: up to three spaces of indent, three or more backticks, an
# info string without backticks. A closing fence has at least as many backticks and nothing else.
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,})([^`\n]*)$", re.MULTILINE)
_HALF = 2  # a structural cut is preferred only in the last 1/_HALF of the window; see _choose_cut


@dataclass(frozen=True, slots=True)
class _Fence:
    open_start: int  # start of the opening line
    open_end: int  # end of the opening line (its newline, or len(text))
    close_start: int  # start of the closing line; len(text) when never closed
    close_end: int  # end of the closing line
    ticks: str
    info: str
    closed: bool

    def reopen(self) -> str:
        return f"{self.ticks}{self.info}\n"

    def close(self) -> str:
        return f"\n{self.ticks}"


def _scan_fences(text: str) -> list[_Fence]:
    fences: list[_Fence] = []
    current: re.Match[str] | None = None
    for m in _FENCE_LINE.finditer(text):
        if current is None:
            current = m
        elif len(m.group(1)) >= len(current.group(1)) and not m.group(2).strip():
            ticks, info = current.group(1), current.group(2).strip()
            fences.append(_Fence(current.start(), current.end(), m.start(), m.end(), ticks, info, True))
            current = None
    if current is not None:
        n = len(text)
        fences.append(_Fence(current.start(), current.end(), n, n, current.group(1), current.group(2).strip(), False))
    return fences


def _is_pair(text: str, i: int) -> bool:
    """A high surrogate at i-1 and a low one at i: a cut at i would break one character."""
    return 0 < i < len(text) and "\ud800" <= text[i - 1] <= "\udbff" and "\udc00" <= text[i] <= "\udfff"


class _Splitter:
    def __init__(self, text: str, limit: int, measure: Measure):
        self.text, self.limit, self.measure = text, limit, measure
        self.fences = _scan_fences(text)
        self._starts = [f.open_start for f in self.fences]
        self.content_end = self.rstrip(0, len(text))
        self._close_starts = [f.close_start for f in self.fences]
        # _longest[i]: the longest backtick run among fences[i:], to reserve room for a closing fence.
        self._longest = [""] * (len(self.fences) + 1)
        for i in range(len(self.fences) - 1, -1, -1):
            self._longest[i] = max(self._longest[i + 1], self.fences[i].ticks, key=len)

    def fence_before(self, pos: int) -> _Fence | None:
        """The last fence opening before ``pos`` (fences never overlap)."""
        i = bisect.bisect_left(self._starts, pos) - 1
        return self.fences[i] if i >= 0 else None

    def inside(self, pos: int) -> _Fence | None:
        """The fence whose body holds ``pos`` (a part starting here must reopen it)."""
        f = self.fence_before(pos)
        return f if f is not None and f.open_end < pos < f.close_start else None

    def open_at_end(self, end: int) -> _Fence | None:
        """The fence a part ending at ``end`` leaves open (so it must close it)."""
        f = self.fence_before(end)
        if f is None or not f.open_start < end <= f.close_start:
            return None
        if end >= self.content_end and not f.closed:
            return None  # the original never closed it either; the last part mirrors it
        return f

    def reserve(self, start: int) -> str:
        """Room for a closing fence, while any fence may still be open in a part from ``start``."""
        ticks = self._longest[bisect.bisect_left(self._close_starts, start)]
        return "\n" + ticks if ticks else ""

    def rstrip(self, start: int, end: int) -> int:
        while end > start and self.text[end - 1].isspace():
            end -= 1
        return end

    def valid_end(self, start: int, end: int) -> bool:
        """An end that is not inside a fence line, nor just after an opening line (an empty block)."""
        if end <= start:
            return False
        f = self.fence_before(end)
        if f is None:
            return True
        return not (f.open_start < end <= f.open_end or f.close_start < end < f.close_end)

    def fits(self, head: str, start: int, end: int, tail: str) -> bool:
        return self.measure(head + self.text[start:end] + tail) <= self.limit

    def max_end(self, head: str, start: int, tail: str) -> int:
        """Largest end with head + text[start:end] + tail within the limit; ``start`` if none.

        Grows the window by doubling, then bisects: O(log) measures of about the part's size.
        """
        n = len(self.text)
        lo, step = start, max(self.limit, 1)
        hi = min(n, start + step)
        while self.fits(head, start, hi, tail):
            lo = hi
            if hi == n:
                return n
            step *= 2
            hi = min(n, start + step)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.fits(head, start, mid, tail):
                lo = mid
            else:
                hi = mid
        return lo

    def choose_cut(self, start: int, end: int) -> int:
        """Where to end the part that may run up to ``end``.

        Paragraph, line, then space breaks in the later half of the window first, so parts stay
        full rather than ending at an early blank line; then the same anywhere; then a hard cut.
        """
        text = self.text
        half = start + (end - start) // _HALF
        for lo in (half, start + 1):
            for sep in ("\n\n", "\n", " "):
                p = text.rfind(sep, lo, end)
                while p != -1:
                    body_end = self.rstrip(start, p)
                    if self.valid_end(start, body_end):
                        return p
                    # Every break between body_end and p ends the part at body_end too: skip them,
                    # so a long run of whitespace is walked once, not once per break in it.
                    p = text.rfind(sep, lo, body_end)
        cut = end - 1 if _is_pair(text, end) else end
        body_end = self.rstrip(start, cut)
        if not self.valid_end(start, body_end):
            # Rather than cut a fence line, or end on an empty block, move the line to the next part.
            f = self.fence_before(body_end)
            if f is not None and f.close_start < body_end < f.close_end and f.close_start > start:
                cut = f.close_start
            elif f is not None and f.open_start > start:
                cut = f.open_start
        return cut

    def next_start(self, cut: int, left_open: _Fence | None) -> int:
        """Skip the whitespace at the cut; inside code keep the next line's indentation."""
        text, n = self.text, len(self.text)
        j = cut
        while j < n and text[j].isspace():
            j += 1
        if left_open is not None and left_open.close_start <= j <= left_open.close_end and left_open.closed:
            # The part already got a closing fence; the original's would only open an empty block.
            return self.next_start(left_open.close_end, None)
        if self.inside(j) is not None:
            k = text.rfind("\n", cut, j)
            if k != -1:
                return k + 1
        return j


def split_text(text: str, limit: int, measure: Measure = len) -> list[str]:
    """Cut ``text`` into parts with ``measure(part) <= limit``, in order.

    Empty or whitespace-only text gives ``[]``; text that fits is returned whole and
    unchanged. Whitespace-only parts are dropped. Joined, the parts give back the text
    except for the whitespace at the cuts and the fence lines added to close and
    reopen code blocks. Raises ValueError when ``limit`` cannot hold even one
    character; a limit too small for a fence's markers plus a character splits that
    code without them.
    """
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    if not text or text.isspace():
        return []
    if measure(text) <= limit:
        return [text]
    s = _Splitter(text, limit, measure)
    n, parts, start = len(text), [], 0
    while start < n:
        fence = s.inside(start)
        head = fence.reopen() if fence is not None else ""
        tail = s.reserve(start)
        end = s.max_end(head, start, tail)
        # The rest may fit once no closing fence needs room: the last part. Checked only when the
        # rest is about the window's size, so the text is not measured whole again for every part.
        if end < n and s.content_end - max(end, start) <= len(tail) and s.fits(head, start, s.content_end, ""):
            end = n
        if end < n:
            if end <= start or (end == start + 1 and _is_pair(text, end)):
                head = tail = ""  # the limit cannot hold the fence markers: plain text it is
                end = s.max_end("", start, "")
                if end <= start or (end == start + 1 and _is_pair(text, end)):
                    raise ValueError(f"limit {limit} cannot hold the character at {start}")
            if end < n:
                end = s.choose_cut(start, end)
        body_end = s.rstrip(start, end)
        left_open = s.open_at_end(body_end) if head or tail else None
        part = head + text[start:body_end] + (left_open.close() if left_open is not None else "")
        if text[start:body_end].strip():
            parts.append(part)
        start = s.next_start(end, left_open) if end < n else n
    return parts
