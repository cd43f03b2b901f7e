"""The Slack adapter's work under way, as a stop ends it: listeners, background tasks, slash commands being
handed over, and the commands a stop left unrecorded, answered to be sent again.

Apart from the adapter (`platforms.slack`) because a stop needs the whole account of it, kept from the moment
each piece of work starts: Socket Mode starts listeners and forgets them, and Slack never sends a command again,
nor keeps it in a history the next start could read back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from platforms import slack_commands
from platforms.base import Inbound, Outbound, Sent
from platforms.not_recorded import Handing

_REMEMBERED_REPLIES = 1000
"""Reply tokens of the commands answered lately (`UnderWay.answering`): a command's hand-over is over within a
stop's grace, by which time far fewer have been answered."""


class UnderWay:
    """Every task a stop must end or wait for, and the commands it must answer."""

    def __init__(self, answer: Callable[[Outbound], Awaitable[Sent]]) -> None:
        """``answer``: the adapter's own word to a command (through its reply token), which nothing sends again:
        tried while the workspace's message limit holds (`platforms.slack_message_limit.MessageLimit.posting`)."""
        self._answer = answer
        self._replied: OrderedDict[str, None] = OrderedDict()
        """Reply tokens of the commands this process began to answer (`answering`), sent or not."""
        self.tasks: set[asyncio.Task[Any]] = set()
        self.listening: set[asyncio.Task[Any]] = set()
        """Listeners running for an event or a command (Socket Mode starts them and forgets them): a stop
        cancels them before the work they start, so none starts any after it."""
        self.unanswered: list[Inbound] = []
        """Slash commands a stop cancelled before the gateway recorded them: told so (`tell_not_taken`)."""
        self.cut_off: list[Inbound] = []
        """Slash commands whose hand-over a stop cancelled midway, which the gateway may have recorded: told they
        may be answered after the restart (`Handing`)."""
        self.commands: set[asyncio.Task[Any]] = set()
        """Slash commands being handed over: a stop lets them finish, within its time (`stop_within`)."""
        self.not_handled: list[Inbound] = []
        """Slash commands the gateway failed on before they were acknowledged: answered so in the acknowledgement
        (`not_handled_in_ack`), else by the stop (`tell_not_taken`)."""
        self.telling: set[asyncio.Task[Any]] = set()
        """Answers that the gateway failed on a command acknowledged already: not background work a stop cancels
        (its user, shown nothing for the empty acknowledgement, would get nothing), but answers it waits for,
        within its time (`tell_not_taken`)."""

    @contextlib.contextmanager
    def listener(self) -> Iterator[None]:
        task = asyncio.current_task()
        assert task is not None
        self.listening.add(task)
        try:
            yield
        finally:
            self.listening.discard(task)

    def background(self, work: Awaitable[None]) -> asyncio.Future[None]:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def other_listeners(self) -> list[asyncio.Task[Any]]:
        """The listeners running, but the one asking (a stop called from a listener must not wait for itself)."""
        return [task for task in self.listening if task is not asyncio.current_task()]

    async def cancel_listeners(self) -> None:
        listening = self.other_listeners()
        for task in listening:
            task.cancel()
        await asyncio.gather(*listening, return_exceptions=True)

    async def cancel_background(self, *, answers: bool = False) -> None:
        """Cancel the background tasks; with ``answers``, also the answers a stop would wait for (`telling`):
        for `close`, after which nothing can be sent."""
        tasks = [*self.tasks, *(self.telling if answers else ())]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def answering(self, reply_token: str) -> None:
        """The adapter begins an answer to a command (before the call: a stop may come during it)."""
        self._replied[reply_token] = None
        self._replied.move_to_end(reply_token)
        while len(self._replied) > _REMEMBERED_REPLIES:
            self._replied.popitem(last=False)

    def replied(self, reply_token: str) -> bool:
        """Whether this process began an answer to the command (`answering`): the stop's word that it may be
        answered after the restart would come below that answer (`slack_commands.tell_not_taken`)."""
        return reply_token in self._replied

    def command_settled(self, inbound: Inbound, handing: Handing, acked: Callable[[], bool],
                        done: asyncio.Future[bool | None]) -> None:
        """A slash command the stop cancelled before the gateway recorded it, or that the store refused once
        the stop began, is answered to be sent again by the stop: Slack never sends it again, and no history
        keeps it for the next start to read back. One the stop cancelled while the sink had it may be recorded,
        as may one the gateway recorded and could not commit yet (`Handing.under_way`), and handled after the
        next start: answered so, not "Not taken" (its user would be told no, then answered). One the gateway
        failed on otherwise (a bug, dropped: `slack_handover.until_taken` is False) is answered that it could not
        be handled (`slack_commands.NOT_HANDLED`): nothing else answers it, and Slack shows its user nothing for an
        empty acknowledgement. Not ``acked()`` yet: in the acknowledgement its listener is about to send
        (`not_handled_in_ack`), which needs no call a stop could cut off; else at once, an answer the stop waits
        for (`telling`): sent as background work, a stop that came meanwhile cancelled it, the user told nothing."""
        if not done.cancelled() and done.exception() is None:
            if done.result() is False:
                if acked():
                    task = asyncio.ensure_future(slack_commands.tell(inbound, slack_commands.not_handled, self._answer))
                    self.telling.add(task)
                    task.add_done_callback(self.telling.discard)
                else:
                    self.not_handled.append(inbound)
            return
        (self.cut_off if handing.under_way else self.unanswered).append(inbound)

    def not_handled_in_ack(self, inbound: Inbound) -> bool:
        """Whether ``inbound``'s listener is to answer in its acknowledgement that the gateway failed on it
        (`command_settled`); then the stop does not."""
        for i, command in enumerate(self.not_handled):
            if command is inbound:
                del self.not_handled[i]
                return True
        return False

    async def tell_not_taken(self, answer: Callable[[Outbound], Awaitable[Sent]], listening: list[asyncio.Task[Any]],
                             ends: float) -> None:
        """Answer the commands the stop left unrecorded that they were not taken, by ``ends`` (loop time),
        once ``listening`` have ended: in Socket Mode, commands the client had begun dispatching as it
        closed, which leave their answers to the stop. Those the gateway failed on that no acknowledgement told so
        (`not_handled`) are told now, and the answers saying so already on their way (`telling`) get the same time."""
        await asyncio.gather(*listening, return_exceptions=True)
        unanswered, cut_off, self.unanswered, self.cut_off = self.unanswered, self.cut_off, [], []
        not_handled, self.not_handled = self.not_handled, []
        await slack_commands.tell_not_taken(unanswered, answer,  # a command's answer, while the session is open
                                            max(ends - asyncio.get_running_loop().time(), 0), cut_off, self.replied,
                                            failed=not_handled, under_way=set(self.telling))
