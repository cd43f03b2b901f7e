"""The services a chat's parent agent calls on its own chat: ``send_message`` and the memory tool's note keys.

Each call finds its chat from the calling turn (`SessionRegistry.calling_turn`) and keys what it
journals by that turn and a count, so a turn run again after a restart repeats none of it. They
stand apart from `gateway.app`, which only hands them to every parent agent with the services
other modules own (``send_file``, ``clarify``).
"""

from __future__ import annotations

from agent import ToolError
from gateway.outbox import Outbox
from gateway.owed_ends import answered_before
from gateway.session_registry import SessionRegistry
from platforms.formatting.blank import is_blank


class ChatServices:
    def __init__(self, sessions: SessionRegistry, outbox: Outbox) -> None:
        self._sessions, self._outbox = sessions, outbox

    async def send_message(self, text: str, target: str | None = None) -> str:
        """``send_message``: to the calling turn's chat only (a target elsewhere is not the model's
        to pick), keyed by turn and count, so a turn run again after a restart repeats none."""
        calling = self._sessions.calling_turn()
        if calling is None:
            raise ToolError("This turn was stopped; nothing more of it reaches the chat.")
        if is_blank(text):
            # The outbox sends nothing for it; counted as said, it would also hide a turn's missing answer.
            raise ToolError("The message is empty (only whitespace or invisible characters): nothing was sent.")
        session, running = calling
        key = f"{running.turn_id}:message:{running.sent}"
        running.sent += 1  # now: a call made while this one is split gets the next key
        sent = "sent to this chat" if target is None else "sent to this chat (other targets are not supported)"
        if answered_before(self._outbox, running):  # the chat has the turn's answer: a new message came after it
            running.said += 1
            return sent
        taken: list[str | None] = []

        def quote() -> str | None:  # taken as its first part is journaled
            taken.append(running.take_quote())
            return taken[-1]

        try:
            await self._outbox.enqueue_long(*session.chat, text, kind="interim", key=key, reply_to=quote)
        except Exception:
            if taken:  # refused (a full disk, another process's write lock): the model's answer quotes instead
                running.give_back_quote(taken[0])
            raise
        running.said += 1
        return sent

    def note_key(self) -> str | None:
        """The memory tool's key for the note the calling turn adds now: by turn and count, so a
        turn run again after a restart keeps each of its notes once. Called from the tool's thread;
        a turn runs its tools one at a time."""
        calling = self._sessions.calling_turn()
        if calling is None:
            return None
        running = calling[1]
        running.noted += 1
        return f"{running.turn_id}:note:{running.noted - 1}"
