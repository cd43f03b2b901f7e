"""The gateway's ``send_file`` service: a workspace file to the calling turn's chat, once.

The tool has already confined the path to what the chat's file tools may read
(`agent.tools.send_file`). Here the platform's limits are checked (its upload limit for
this chat, on the open file, and its caption length), the file is copied into the state directory
(`gateway.outbox_files`) and the send journaled in the outbox, in the chat's order with
its other messages. The key is the turn's and the count of files it has sent
(``<turn>:file:<n>:0``), like ``send_message``'s: a turn run again after a restart journals
none twice, and what its first run journaled is sent from the copy made then. A copy whose
turn was stopped while it was made is removed once the copying thread is done with it.

A turn's calls go one at a time, in the order they were made (a plugin's tool may make several
at once): each takes its key from the count the one before left, and starts once the one before
has journaled its send or given up, and its copying thread is done.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from agent import ToolError
from agent.tools.send_file import FileToSend, human_size
from gateway.outbox import Outbox
from gateway.outbox_files import FileChanged, OutboxFiles, sent_name
from gateway.owed_ends import answered_before
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession, RunningTurn
from gateway.splitting import safe_measure
from platforms.base import Adapter, CapsSpans, SendsFiles

log = logging.getLogger("gateway.outbox")

STOPPED = "This turn was stopped; nothing more of it reaches the chat."


class _Calls:
    """A turn's calls waiting or running: one at a time (`FileSends.send_file`)."""

    __slots__ = ("lock", "count", "copying")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.count = 0
        self.copying: asyncio.Future[int] | None = None
        """The copy of a call cancelled while it was made: the next call waits for its thread."""


class FileSends:
    def __init__(self, sessions: SessionRegistry, outbox: Outbox, files: OutboxFiles,
                 adapters: dict[str, Adapter]) -> None:
        self._sessions, self._outbox, self._files, self._adapters = sessions, outbox, files, adapters
        self._calls: dict[str, _Calls] = {}
        """By turn id, while a call of the turn waits or runs."""

    async def send_file(self, file: FileToSend) -> str:
        """The ``send_file`` service. Raises `ToolError` (for the model) when the turn was stopped,
        the platform takes no files, or the file or caption is not one it takes."""
        calling = self._sessions.calling_turn()
        if calling is None:
            raise ToolError(STOPPED)
        session, running = calling
        adapter = self._adapters.get(session.platform)
        if not isinstance(adapter, SendsFiles):
            raise ToolError(f"This chat's platform ({session.platform}) cannot receive files yet; nothing was "
                            "sent. Tell the user where the file is in the workspace instead.")
        # Calls made at once would read the same count of files sent, so journal under one key (the
        # outbox taking the later sends for the first one's) and make their copies in one folder.
        turn_id = running.turn_id
        calls = self._calls.setdefault(turn_id, _Calls())
        calls.count += 1
        try:
            await calls.lock.acquire()
        except BaseException:
            self._leave(turn_id, calls)
            raise
        try:
            if running.suppressed:  # stopped while an earlier call of the turn ran
                raise ToolError(STOPPED)
            return await self._send(session, running, adapter, file, calls)
        finally:
            if calls.copying is None:
                self._release(turn_id, calls)
            else:  # its copy goes on in its thread, under the key the next call would take
                calls.copying.add_done_callback(lambda _: self._release(turn_id, calls))

    async def _send(self, session: GatewaySession, running: RunningTurn, adapter: SendsFiles, file: FileToSend,
                    calls: _Calls) -> str:
        key = f"{running.turn_id}:file:{running.files}:0"
        name = sent_name(file.path.name)
        # A run before a restart journaled it: sent from its copy, quoting what it took then, as a `send_message`
        # run again does. Or that run journaled the turn's answer: a file it did not send came after the answer.
        if self._outbox.journaled(key) or answered_before(self._outbox, running):
            running.take_quote()
        else:
            caption = file.caption or ""
            if isinstance(adapter, CapsSpans) and (spans := adapter.spans(caption)) > adapter.max_spans:
                raise ToolError(f"The caption has {spans} formatted spans (bold, italic, code, links), more than "
                                f"the {adapter.max_spans} {session.platform} reads; nothing was sent. Send the file "
                                "with a caption with less formatting, or the text with send_message.")
            length, most = safe_measure(adapter)(caption), adapter.caption_limit
            if length > most:
                raise ToolError(f"The caption is {length} characters long, more than the {most} {session.platform} "
                                "shows with a file; nothing was sent. Send the text with send_message and the file "
                                "with a shorter caption.")
            limit = adapter.upload_limit(session.chat_id)
            copying = asyncio.ensure_future(asyncio.to_thread(self._keep, key, file, limit, session.platform))
            try:
                size = await asyncio.shield(copying)
            except asyncio.CancelledError:  # a hard stop, or a caller giving up: the thread copies on, unjournaled
                copying.add_done_callback(functools.partial(self._forget_copy, key))
                calls.copying = copying
                raise
            if running.suppressed:  # stopped while the file was copied
                self._files.remove(key)
                raise ToolError(STOPPED)
            # The first message of the answer, it shows whose question it answers (`RunningTurn.take_quote`).
            quote = running.take_quote()
            try:
                self._outbox.enqueue_file(*session.chat, caption, key=key, turn_id=running.turn_id, reply_to=quote)
            except Exception:
                self._refused(key)
                running.give_back_quote(quote)  # the answer the model writes without the file quotes instead
                raise
            name = f"{name} ({human_size(size)})"
        running.files += 1
        return f"{name} is queued to this chat; it goes out in order with your messages."

    def _release(self, turn_id: str, calls: _Calls) -> None:
        calls.copying = None
        calls.lock.release()
        self._leave(turn_id, calls)

    def _leave(self, turn_id: str, calls: _Calls) -> None:
        calls.count -= 1
        if not calls.count:
            del self._calls[turn_id]

    def _refused(self, key: str) -> None:
        """The journal refused the send (a full disk): nothing sends its copy, which would stay until
        the next start (`OutboxFiles.sweep`) on the disk that had no room. When the journal cannot be
        read either, the copy is left to that sweep, and a line names the send and why: ignored without
        a word, a copy stayed on the full disk with nothing to say whose it was."""
        self._remove_unjournaled(key, "the journal refused")

    def _forget_copy(self, key: str, copying: asyncio.Future[int]) -> None:
        """The copy a cancelled call made: no send names it, so it goes now rather than at the next
        start (`OutboxFiles.sweep`), where a process running for weeks would keep one per such stop.
        A done-callback: what the journal raises when it cannot be read (a lock, a disk error) is
        logged here, naming the send, and the copy left to that sweep. Raised on, the loop logged an
        "Exception in callback" naming neither."""
        if copying.cancelled() or copying.exception() is not None:
            return
        self._remove_unjournaled(key, "of a stopped turn")

    def _remove_unjournaled(self, key: str, whose: str) -> None:
        """Remove the copy of the send ``key`` unless the journal holds the send; when the journal cannot be
        read, leave it to the next start's sweep, naming the send and why (``whose``: which send it is)."""
        try:
            journaled = self._outbox.journaled(key)
        except Exception as exc:
            log.warning("outbox: cannot tell whether the send %s %s was journaled (%s: %s); its copy is kept until"
                        " the next start removes it", key, whose, type(exc).__name__, exc)
            return
        if not journaled:
            self._files.remove(key)

    def _keep(self, key: str, file: FileToSend, limit: int, platform: str) -> int:
        try:
            return self._files.keep(key, file, limit, platform)
        except FileChanged as exc:
            raise ToolError(f"{exc}; nothing was sent") from None
        except OSError as exc:
            raise ToolError(f"cannot copy {file.shown!r} to send it: {exc.strerror or exc}; nothing was sent") from None
