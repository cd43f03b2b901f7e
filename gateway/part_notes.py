"""The short notes the sender journals about a message's parts: one ahead of a late message, one in
place of a part (or a file the agent sent) that failed for good.

Each note is journaled as a part of its own, keyed from the part it concerns, so it goes out once,
in its place, across restarts too. What they say and when a message is late is `gateway.late_notes`'s;
deciding whether a note is owed and journaling it stands apart from `gateway.sender`'s delivery loop,
which only sends the note it is handed.
"""

from __future__ import annotations

import re

from gateway import late_notes
from gateway.long_messages import FILE_PART, file_missing_text
from gateway.outbox_files import OutboxFiles
from gateway.outbox_part import PROGRESS_KINDS
from gateway.store import NewMessage, OutboxRow, OutboxRows
from platforms.base import AttachmentTooLarge, BadRequest, EditUnsupported, Forbidden, MessageTooLong, NotFound

REFUSALS = (Forbidden, NotFound, BadRequest, EditUnsupported, MessageTooLong, AttachmentTooLarge)
"""What the platform refuses a part with for good (`gateway.sender`): a part that failed with anything else was
given up on."""

MISSING = ":missing"
"""Appended to a message's key to make the key of its note that one of its parts could not be sent."""


def missing_text(part: int, parts: int, *, gave_up: bool) -> str:
    """The note sent in place of part ``part`` (from 1) of a message of ``parts`` that failed for good."""
    why = "the platform kept failing" if gave_up else "the platform refused it"
    return f"(part {part} of {parts} could not be sent: {why})"


def file_text(name: str | None, why: str, *, unsure: bool = False) -> str:
    """The note sent in place of a file the agent sent (`send_file`) that failed for good: ``name`` as the
    model was told it, in a code span (a name such as ``__init__.py`` would read as bold), None when it is
    unknown (the gateway's copy of the file, which holds the name, is gone). ``unsure``: an answer of the
    platform's was lost, so the file may be in the chat after all, which the note must not deny."""
    failed = "may not have been sent here" if unsure else "could not be sent here"
    if name is None:
        return f"(A file {failed}: {why}.)"
    fence = "`" * (max((len(run) for run in re.findall("`+", name)), default=0) + 1)
    pad = " " if name.startswith("`") or name.endswith("`") else ""
    return f"(The file {fence}{pad}{name}{pad}{fence} {failed}: {why}.)"


_TOO_LARGE = re.compile(r"too[ _](?:large|big)|larger than", re.IGNORECASE)
"""How a platform refusing a file's size says so: Telegram's and Discord's 413 ("Request Entity Too Large"),
a proxy's in front of the Bot API (`platforms.telegram_errors`), Slack's ``file_too_large``."""


def file_reason(error: str, *, gave_up: bool) -> str:
    """Why a file failed, from its recorded error (`gateway.outbox_part.describe`), in words a chat's user
    can act on; never the platform's own words, which may name what the chat should not read."""
    if gave_up:
        return "the platform kept failing"
    name = error.partition(":")[0]
    if name in _names(AttachmentTooLarge) or _TOO_LARGE.search(error):
        return "it is larger than this chat takes"
    if name in _names(MessageTooLong):  # its size is refused as too large: this is its caption's length
        return "its caption is longer than this chat takes"
    return "the platform refused it"


def late_note(store: OutboxRows, row: OutboxRow, *, age: float, late_after: float) -> OutboxRow | None:
    """The pending note to send ahead of ``row`` (journaled now if it is not yet), when
    ``row`` opens a message sent `late_after` seconds or more after it was journaled
    (`gateway.late_notes`); None when there is none to send, or it is final already. The note
    quotes what ``row`` quotes: in a group, it concerns that member's answer. Ahead of an answer for its command's
    user alone (`OutboxRow.private`) it goes to that user alone too, through the same interaction: in the channel
    it announced what no one there would see (and stood alone once the interaction had expired)."""
    # answer.md after a message's first parts (`gateway.long_messages`) continues that message: noted at its first.
    if not (0 < late_after <= age and late_notes.opens_message(row.key) and not row.key.endswith(FILE_PART)
            and row.platform not in late_notes.WITHOUT_NOTES):
        return None
    key = row.key + late_notes.SUFFIX
    note = store.message(key)
    if note is None:
        store.add_messages([NewMessage(key, row.platform, row.chat_id, row.thread_id,
                                       late_notes.note_text(age), kind=row.kind, silent=row.silent,
                                       turn_id=row.turn_id, reply_to=row.reply_to, private=row.private,
                                       reply_token=row.reply_token if row.private else None)])
        note = store.message(key)
    return note if note is not None and note.status == "pending" else None


def missing_note(store: OutboxRows, row: OutboxRow, *, gave_up: bool = False, files: OutboxFiles | None = None,
                 unsure: bool = False, unreadable: OSError | None = None) -> OutboxRow | None:
    """The note to send in ``row``'s place, journaled now, when ``row`` failed for good: where it is a
    part of a message of several (a long answer), a short note goes in its place (`missing_text`), else
    the answer reads whole with a hole in it. One per message: should another of its parts fail too (the
    bot blocked: every part, and the note, is refused), that one goes without; a note failing gets none.
    Journaled as it goes, as a late note is: one the process died sending goes at the next start (after
    the message's later parts). None when no note is owed.

    A piece of a re-split part (`gateway.resplit`) is a message in the chat like a part: once another
    piece of its part went out, the chat reads the pieces as the part, so the one missing is noted, and
    numbered, among the message's messages in the chat (a part's pieces counted one by one). Until one
    did, none is owed for it: should none go out, the note is the part's (`gateway.sender`).

    A file the agent sent gets one too (`file_note`; ``unsure``: it may have gone out, its answer lost;
    ``unreadable``: what reading its copy raised): the model was told it was queued."""
    if row.kind in PROGRESS_KINDS or row.platform in late_notes.WITHOUT_NOTES:
        return None  # a progress message is one part; a webhook's caller reads each part's sequence
    if row.op == "file":
        return file_note(store, row, gave_up=gave_up, files=files, unsure=unsure, unreadable=unreadable)
    if row.op not in ("send", "split"):
        return None
    message, _, number = row.key.rpartition(":")
    part, *names = number.split("/")
    if not (message and part.isdigit()):
        return None  # a late note
    if names and not any(p.status == "sent" for p in store.pieces(row.key.rpartition("/")[0])):
        return None  # no piece of its part went out (yet): its part is noted, or its note waits for one
    place, total = int(part) + 1, int(part) + 1
    while store.has_message(f"{message}:{total}"):
        total += 1
    if names:  # counted as the chat shows them: each piece of a split part is a message of its own
        shown = [key for i in range(total) for key in _in_chat(store, f"{message}:{i}")]
        if row.key not in shown:
            return None  # its part is no longer journaled as re-split (pruned meanwhile): nothing to count it in
        place, total = shown.index(row.key) + 1, len(shown)
    if total < 2:
        return None
    return _journal(store, row, message + MISSING, missing_text(place, total, gave_up=gave_up))


def file_note(store: OutboxRows, row: OutboxRow, *, gave_up: bool, files: OutboxFiles | None,
              unsure: bool = False, unreadable: OSError | None = None) -> OutboxRow | None:
    """The note to send in place of the file ``row`` (`send_file`), journaled now, once ``row`` failed for good
    (its error recorded): its name, and why (`file_reason`; its copy gone, the name with it, when ``files`` holds
    none); for a long message's ``answer.md``, that the rest of the answer is missing, and why
    (`gateway.long_messages.file_missing_text`). ``unreadable``: what reading the copy raised (a failing disk, a
    folder of another owner): the name goes, why it failed stays (a platform's refusal of its size, say), unless
    that same error is what failed it. One per file: a console Retry that fails again gets none, one that succeeds
    leaves it as it is."""
    copy = files.get(row.key) if files is not None and unreadable is None else None
    error = (store.message_by_id(row.id) or row).last_error or ""
    if copy is None and (unreadable is None or error.partition(":")[0] == type(unreadable).__name__):
        why = "the gateway's copy of it is gone"
    else:
        why = file_reason(error, gave_up=gave_up)
    if row.key.endswith(FILE_PART):  # a long message's answer.md: its caption, saying what it held, went with it
        shown = _parts(store, row.key.removesuffix(FILE_PART))
        text = file_missing_text(copy.size if copy is not None else None, shown, why, unsure=unsure)
    else:
        text = file_text(copy.name if copy is not None else None, why, unsure=unsure)
    return _journal(store, row, row.key.rpartition(":")[0] + MISSING, text, quoting=True)


def file_noted(store: OutboxRows, row: OutboxRow) -> int | None:
    """The id of the file send whose note (`file_note`) ``row`` is; None for any other row. A note journaled
    before a restart and still pending goes in that file's place, ahead of what was queued behind the file,
    which its id alone would put it after (`gateway.outbox.Outbox.start`)."""
    if not row.key.endswith(MISSING):
        return None
    file = store.message(row.key.removesuffix(MISSING) + ":0")
    return file.id if file is not None and file.op == "file" else None


def _journal(store: OutboxRows, row: OutboxRow, key: str, text: str, *, quoting: bool = False) -> OutboxRow | None:
    """Journal the note ``key`` in ``row``'s place among its turn's messages; None when it was journaled before.
    ``quoting``: it quotes what ``row`` did (a file opening the answer in a group quotes the question, and so
    does the note in its place, as a late note does; the reply after it quotes all the same)."""
    if store.has_message(key):
        return None
    store.add_messages([NewMessage(key, row.platform, row.chat_id, row.thread_id, text, kind=row.kind,
                                   silent=row.silent, reply_token=row.reply_token, turn_id=row.turn_id,
                                   sequence=row.sequence, reply_to=row.reply_to if quoting else None,
                                   private=row.private)])
    return store.message(key)


def gave_up_on(row: OutboxRow) -> bool:
    """Whether the failed ``row`` was given up on (the platform kept failing) rather than refused, as its recorded
    error says (`gateway.outbox_part.describe`: the class first): for a note owed after the failure was recorded."""
    name = (row.last_error or "").partition(":")[0]
    return not any(name in _names(refusal) for refusal in REFUSALS)


def _parts(store: OutboxRows, message: str) -> list[str]:
    """The texts of the parts journaled of ``message`` (those ahead of its ``answer.md``)."""
    parts: list[str] = []
    while (part := store.message(f"{message}:{len(parts)}")) is not None:
        parts.append(part.text)
    return parts


def _names(cls: type) -> set[str]:
    return {cls.__name__}.union(*(_names(sub) for sub in cls.__subclasses__()))


def _in_chat(store: OutboxRows, key: str) -> list[str]:
    """The keys of the messages the part ``key`` is in the chat: its own, or its pieces' once it was re-split (one
    failed, none of its pieces went out: it counts as one, as a part that failed whole does)."""
    row = store.message(key)
    if row is None or row.op != "split" or row.status == "failed":
        return [key]
    return [shown for piece in store.pieces(key) for shown in _in_chat(store, piece.key)]
