"""A message too long for its chat: its first parts, then the whole of it as a file.

A model gone wrong (an answer looping on, a dump of a large file) can write megabytes: split to the
platform's limit, hundreds or thousands of messages (a megabyte is 256 of Telegram's), each paced, holding
the chat's line for many minutes and inviting the platform to rate-limit or flag the bot. So a message that
splits into more parts than its platform's bound (``display.max_message_parts``, per platform as the display
settings are: `max_parts`; 0: none) is journaled as its first parts up to the bound and one more: the whole
text as ``answer.md``, its caption a note saying so, where the adapter takes files (`platforms.base.SendsFiles`)
within its upload limit; elsewhere a note saying how much was left out. An answer for a command's user alone
(`platforms.base.Outbound.private`: every answer to a Slack slash command, a Discord command's refusal) gets the
file only where the adapter uploads one for that user alone (``sends_files_privately``: Discord's ephemeral
follow-up), journaled as private as its parts; elsewhere the note, saying why: there a file goes to the whole
channel. The outbox journals them in one statement, as parts of one message (`gateway.outbox.Outbox`): each sent
once, in order, across restarts too.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agent.tools.send_file import human_size
from gateway import link_references
from gateway.display import NO_INTERIM
from gateway.outbox_files import OutboxFiles
from gateway.split_fences import scan_fences
from gateway.splitting import split_text
from gateway.store import NewMessage
from platforms.base import Adapter, SendsFiles

if TYPE_CHECKING:
    from gateway.config import Config

log = logging.getLogger("gateway.outbox")

DEFAULT_MAX_PARTS = 16
"""``display.max_message_parts``'s default: 16 of Telegram's parts are about 65,000 characters."""
FILE_NAME = "answer.md"
FILE_PART = ":file:0"
"""Appended to the message's key for the file's: ``:file:`` tells the outbox a send with a copy to remove."""
CUT_PART = ":cut"
"""Appended to the message's key for the note sent where no file can go."""


def max_parts(config: Config, platform: str) -> int:
    """The bound for ``platform``: ``display.platforms.<p>.max_message_parts``, else ``display.max_message_parts``."""
    overrides = config.display.platforms.get(platform)
    most = overrides.max_message_parts if overrides is not None else None
    return config.display.max_message_parts if most is None else most


def split_bounded(text: str, limit: int, measure: Callable[[str], int], most: int) -> list[str]:
    """`split_text`, but of a text far longer than ``most`` parts (0: no bound) hold only a start is split, one
    long enough to give more than ``most`` parts: the rest of the parts would be left out (`tail`), after
    seconds of splitting for nothing (a megabyte takes about ten for Telegram, which renders what it measures).
    The parts before the start's last are the whole text's, but where a paragraph or a style runs past the
    start's end (read as unclosed there). The link reference definitions the start uses and only the rest
    holds are written after it (`_definitions_after`), so its parts carry them as the whole text's do."""
    if most > 0:
        size = (most + 2) * limit
        references: link_references.References | None = None
        while size < len(text):
            cut = link_references.cut_before_definition(text, size, limit)
            start = text[:cut]
            if references is None and link_references.may_define(text, cut, start):
                references = link_references.LateReferences(text, len(text), longest=limit)
            after = _definitions_after(start, references) if references else ""
            parts = split_text(start + after, limit, measure)
            if len(parts) > most:
                return parts
            size *= 2
    return split_text(text, limit, measure)


def _definitions_after(start: str, references: link_references.References) -> str:
    """The definitions (of the whole text: ``references``) that ``start`` uses, to write after it, where only
    its last part, never sent, has them as text; after closing a fence ``start`` leaves open, in which they
    would be code."""
    used = references.for_part(start)
    if not used:
        return ""
    fences = scan_fences(start)
    return (fences[-1].close() if fences and not fences[-1].closed else "") + used


def tail(first: NewMessage, key: str, text: str, shown: Sequence[str], adapter: Adapter,
         files: OutboxFiles | None) -> NewMessage:
    """The part journaled after ``shown``, the first parts of ``text`` (the message ``key``, its first part
    ``first``): `Tail.make` of `plan_tail`, on the caller's thread (blocking)."""
    return plan_tail(first, key, text, shown, adapter, files).make()


@dataclasses.dataclass(frozen=True)
class Tail:
    """The part after a message's first ones, as far as it is decided without its size: the adapter is asked on
    the event loop (Discord's limit reads its client's cache), the rest is `make`'s, in a worker thread."""

    note: NewMessage
    """The first part's row, made the note's: its key, text and op are `make`'s."""
    key: str
    text: str
    shown: Sequence[str]
    files: OutboxFiles | None
    """Where ``answer.md``'s copy is kept; None where no file goes (`plan_tail`)."""
    upload_limit: int

    def make(self) -> NewMessage:
        """The file ``answer.md`` holding the text, its copy kept now (one a run before left is replaced), or the
        note saying what was left out where no file goes, or not one that large, or the copy cannot be written.
        Blocking: it encodes the whole text and writes, flushes and renames the copy (10 MB: some 20 ms, then
        90 ms, as measured; more on a slow disk)."""
        data = self.text.encode("utf-8", "replace")
        if self.files is not None:
            if len(data) > self.upload_limit:
                return dataclasses.replace(self.note, key=self.key + CUT_PART,
                                           text=left_out_text(data, self.shown, too_large=True))
            try:
                self.files.keep_bytes(self.key + FILE_PART, FILE_NAME, data)
                return dataclasses.replace(self.note, key=self.key + FILE_PART, op="file",
                                           text=in_file_text(len(data)))
            except OSError as exc:
                log.warning("outbox: %s chat %s: cannot keep %s of %s (%s); a note says what was left out instead",
                            self.note.platform, self.note.chat_id, FILE_NAME, self.key, exc.strerror or exc)
        return dataclasses.replace(self.note, key=self.key + CUT_PART,
                                   text=left_out_text(data, self.shown, private=self.note.private))


def plan_tail(first: NewMessage, key: str, text: str, shown: Sequence[str], adapter: Adapter,
              files: OutboxFiles | None) -> Tail:
    """The `Tail` of ``text``, the message ``key`` shown as its first parts ``shown`` (its first part ``first``):
    a file where the platform takes files and shows it to whom this message is for, else a note
    (`NO_INTERIM`: dropped with the parts). Writes nothing."""
    note = dataclasses.replace(first, reply_to=None, tried=False, sequence=None if first.turn_id else len(shown))
    # Where no interim message shows, its adapter drops its parts, and would deliver its ``answer.md`` (a file it
    # cannot tell from one the agent sends): it gets the note, dropped with them. An answer for its command's user
    # alone gets the note too where the adapter shares every file in the chat (Slack's ephemeral messages carry
    # none); Discord's ephemeral follow-up carries one to that user alone (``sends_files_privately``).
    shown_here = first.kind != "interim" or first.platform not in NO_INTERIM
    to_whom = not first.private or getattr(adapter, "sends_files_privately", False)
    if files is not None and isinstance(adapter, SendsFiles) and shown_here and to_whom:
        return Tail(note, key, text, shown, files, adapter.upload_limit(first.chat_id))
    return Tail(note, key, text, shown, None, 0)


def in_file_text(size: int) -> str:
    # A code span: Telegram's apps would link a bare answer.md to the site of that name (.md is a domain).
    return f"The answer is too long for this chat ({human_size(size)}); the whole of it is in `{FILE_NAME}`."


def left_out_text(data: bytes, shown: Sequence[str], *, too_large: bool = False, private: bool = False) -> str:
    """The note where the whole cannot go as a file; how much was left out is about right (a part may hold a
    marker the text has not, to close a style or a code block at its end). ``private``: the answer is for its
    command's user alone, which no file can be on its platform (`plan_tail`)."""
    why = ", and too large to send here as a file" if too_large else ""
    left = f"The answer is too long for this chat ({human_size(len(data))}){why}; the rest of it (about " \
           f"{human_size(_left(len(data), shown))})"
    if private:
        return f"{left} was not sent: this answer is for you alone, and no file can go to you alone here."
    return f"{left} was left out."


def file_missing_text(size: int | None, shown: Sequence[str], why: str, *, unsure: bool = False) -> str:
    """The note in place of ``answer.md`` once it failed for good (`gateway.part_notes.file_note`, which says
    ``why``): its caption, saying what it held, went with it, and a note naming a file alone would not tell the
    chat that the answer stops short. ``size``: the whole text's, in bytes, None when the gateway's copy of it is
    gone; ``shown``: the texts of the parts before it; ``unsure``: it may be in the chat after all."""
    failed = "may not have been sent here" if unsure else "could not be sent here"
    if size is None:
        return f"The answer is too long for this chat; the rest of it {failed} as a file: {why}."
    return (f"The answer is too long for this chat ({human_size(size)}); the rest of it (about "
            f"{human_size(_left(size, shown))}) {failed} as a file: {why}.")


def _left(size: int, shown: Sequence[str]) -> int:
    return max(size - sum(len(part.encode("utf-8", "replace")) for part in shown), 0)
