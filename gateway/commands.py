"""Chat commands: handled as they arrive, also while a turn is running."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from collections import ChainMap
from collections.abc import Awaitable, Callable, Container, Mapping
from dataclasses import dataclass

from agent import Clock, PluginCommand, PluginThreads
from gateway.agents_command import AgentsCommand, Threads, counted
from gateway.delegation_command import DelegationCommand
from gateway.ledger import Ledger
from gateway.session_registry import Drops, SessionRegistry, every, unread_steered
from gateway.sessions import GatewaySession, Heard
from lifecycle import HostView, Routing
from platforms.base import Adapter, CommandSpec, Inbound, LosesChats, OwnCommands
from platforms.formatting.blank import is_blank, trimmed

log = logging.getLogger("gateway.commands")

PLUGIN_COMMAND_THREADS = 32
"""Worker threads for plain plugin command handlers, apart from the loop's shared pool: handlers
stuck on a dead service (and asked again and again) hold these, never the threads that tools, hooks
and downloads need. A stopping gateway does not wait for them (`agent.PluginThreads`)."""
PLUGIN_COMMAND_THREADS_PER_CHAT = 4
"""How many of them one chat's (or thread's) commands may hold: a handler that hangs, asked again and
again in one chat, leaves the rest to the other chats' commands."""

BUILTIN = (
    CommandSpec("stop", "Stop the running turn and every subagent of this chat"),
    CommandSpec("new", "Start a new session (forget this conversation); text after it is its first message",
                aliases=("reset",)),
    CommandSpec("agents", "List this chat's subagents; /agents log|stop|retry ID for one of them"),
    CommandSpec("retry", "Run the interrupted or failed subagents of the last background task again"),
    CommandSpec("delegation", "Show or switch how this chat's subagents are routed"),
    CommandSpec("help", "What the commands do"),
)
ALIASES = {alias: c.name for c in BUILTIN for alias in c.aliases}
BUILTIN_COMMAND_NAMES = frozenset({*(c.name for c in BUILTIN), *ALIASES})
"""Names no plugin command may take (`parse` and `Commands.run` would never reach it)."""


LEAD_A_MESSAGE = frozenset({"new"})
"""Commands without arguments whose text after the name is the chat's next message: ``/new
plan the trip`` starts the new session with it. (After ``/stop`` it is mostly emphasis —
``/stop now`` — so it is not sent to the model; the answer says so.)"""
ANSWERED_AT_ONCE = frozenset({"stop", "new"})
"""Commands answered as they come, ahead of the chat's earlier commands still being answered (a plugin's, which may
take its time: `gateway.command_answers.CommandAnswers.answer_in_line`). ``/stop`` is the chat's brake, never to
wait behind a handler that hangs; ``/new`` decides what the chat's next messages are answered in, and those do not
wait for commands: answered after a slow command, it found them answered in the old session and reset nothing."""
STOP_ARGS_NOTE = "What you wrote after /stop was not read: send it as a message of its own to have it answered."
NEW_TEXT_AT_TOP = ("What you wrote after /new is answered at this channel's top level, where no conversation goes on: "
                   "a reply to that answer is not read as part of it. To talk it over, mention me with it in the "
                   "channel: the thread that starts goes on with it.")
"""``/new plan the trip`` at a Slack channel's top level (`Commands._no_conversation`): its text's answer is posted
there, and a reply in that answer's thread is heard, if at all (mentioned), as a thread's session of its own."""
RETRY_ARGS = ("Nothing was retried: /retry runs every interrupted or failed subagent of the latest background task "
              "again, and takes nothing after it. To run one subagent again, send /agents retry ID (/agents lists "
              "the ids).")
"""``/retry sa-…``: read as ``/retry`` it would run every failed subagent again, not the one named."""
STOP_SENT_BEFORE = ("The running turn was not stopped: it answers a message sent after this /stop. "
                    "Send /stop again to stop it.")
NEW_SENT_BEFORE = ("No new session was started: this /new was sent before the message being answered now, "
                   "which this session goes on with. Send /new again to start a new one.")
SentBefore = Callable[[Inbound, Inbound | Heard | None], bool]
"""``sent_before(event, other)``: whether ``event`` was sent before ``other`` (False when unknown)."""
TurnEvent = Callable[[str, str], Inbound | None]
"""``turn_event(platform, turn_id)``: the message that turn answers, while the inbox remembers it."""
ReplyJournaled = Callable[[str], Awaitable[None]]
"""``reply_journaled(turn_id)``: returns once that turn's reply, if being journaled now, is, and, for a turn a stop
ended, its typing request still on the wire is answered (`gateway.turn_runner.TurnRunner.reply_journaled`)."""


async def _nothing_journaling(turn_id: str) -> None:
    return None


def new_sent_before_answered(n: int) -> str:
    """A late ``/new``'s answer, when the session has answered ``n`` messages sent after it."""
    messages = "1 message" if n == 1 else f"{n} messages"
    return (f"No new session was started: this /new was sent before {messages} this session has answered "
            "since, which a new session would forget. Send /new again to start a new one.")


def stop_spared(n: int) -> str:
    """A late ``/stop``'s word on the ``n`` subagents of ended turns it left running."""
    if n == 1:
        return ("1 subagent started for a message sent after this /stop goes on. "
                "Send /stop again to stop it.")
    return f"{n} subagents started for messages sent after this /stop go on. Send /stop again to stop them."


def stop_not_saved(n: int) -> str:
    """``/stop``'s word on the ``n`` subagents it is stopping when the journal could not commit their stop
    (`HostView.stops_committed`): not "Stopped", as a restart before it is saved would find them lost, and might
    run them again."""
    who = "1 subagent" if n == 1 else f"{n} subagents"
    return (f"Stopping {who}, but the stop is not saved yet (the state database cannot be written): if the gateway "
            f"restarts before it is, {'it' if n == 1 else 'they'} may run again.")


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    args: str

    @property
    def then_message(self) -> str | None:
        """What follows ``/new`` in the same message (``/new plan the trip``): the chat's next
        message, handled once the command has run; None for the other commands, and when nothing shown follows
        (``/new`` and a zero-width space: a turn of the model answering what no one could read)."""
        return self.args if self.name in LEAD_A_MESSAGE and not is_blank(self.args) else None


def parse(text: str, known: Container[str]) -> Command | None:
    """``/name args`` or ``!name args`` for a known command (the name ends at the first space or
    line break); anything else is a message. Invisible characters around it or its name count as spaces do: the
    chat shows ``/stop`` (`platforms.formatting.blank.trimmed`)."""
    stripped = trimmed(text)
    if len(stripped) < 2 or stripped[0] not in "/!" or stripped[1].isspace():
        return None
    # Its arguments as written to their end: what `trimmed` cut off may end their last character (❤️'s variation
    # selector, a flag's tags), and the model got a black heart. What shows nothing is none.
    head, *rest = text[text.index(stripped[0]):].rstrip()[1:].split(maxsplit=1)
    name = trimmed(head.split("@", 1)[0]).lower()  # /stop@botname
    name = ALIASES.get(name, name)
    return Command(name, "" if not rest or is_blank(rest[0]) else rest[0]) if name in known else None


class Commands:
    """The built-in commands and the plugins' ones; `run` answers with the text to send."""

    def __init__(self, registry: SessionRegistry, children: HostView, ledger: Ledger,
                 plugins: Mapping[str, PluginCommand], *, adapters: Mapping[str, Adapter], clock: Clock,
                 sent_before: SentBefore, turn_event: TurnEvent = lambda platform, turn_id: None,
                 routing: Routing | None = None, reply_journaled: ReplyJournaled = _nothing_journaling) -> None:
        """``sent_before``: the order the chat's messages were sent in (`gateway.app.Gateway._sent_before`);
        ``turn_event``: the message a turn answers (`gateway.store.Inbox.event_of_turn`); ``reply_journaled``:
        `gateway.turn_runner.TurnRunner.reply_journaled`."""
        self._registry = registry
        self._reply_journaled = reply_journaled
        self._sent_before = sent_before
        self._turn_event = turn_event
        self._adapters = adapters
        self._children = children
        self._ledger = ledger
        self._plugins = plugins
        self._known = ChainMap(dict.fromkeys(c.name for c in BUILTIN), plugins)
        """Every command's name, the plugins' read live: `parse` runs for every message."""
        self._clock = clock
        self._agents = AgentsCommand(children, ledger, clock)
        self._delegation = DelegationCommand(registry, routing or Routing())
        self._threads = PluginThreads(PLUGIN_COMMAND_THREADS, "plugin-command", per_key=PLUGIN_COMMAND_THREADS_PER_CHAT)
        for adapter in adapters.values():
            if isinstance(adapter, LosesChats):
                adapter.bind_chat_lost(functools.partial(self.chat_lost, adapter.name))

    def specs(self) -> list[CommandSpec]:
        plugins = [CommandSpec(name, c.description or f"plugin command from {c.plugin}")
                   for name, c in self._plugins.items()]
        return [*BUILTIN, *plugins]

    def parse(self, text: str) -> Command | None:
        return parse(text, self._known)

    def is_plugin(self, command: Command) -> bool:
        """Whether a plugin serves ``command``: its handler may take its time."""
        return command.name in self._plugins

    async def run(self, session: GatewaySession, command: Command, inbound: Inbound) -> str:
        if command.name == "stop":
            return await self._stop(session, command.args, inbound)
        if command.name == "new":
            started = await self._new(session, inbound)
            lost = command.then_message is not None and self._no_conversation(session, inbound)
            return f"{started} {NEW_TEXT_AT_TOP}" if lost else started
        if command.name == "agents":
            threads = self._thread_sessions(session)
            return await self._agents.run(session, command.args, threads=Threads(
                threads, *_in_a_thread(session.platform, "agents")) if threads else None)
        if command.name == "retry":
            return await self._ledger.retry(session) if not command.args else RETRY_ARGS
        if command.name == "delegation":
            apart = _delegation_apart(session.platform) if self._threads_apart(session, inbound) else None
            return self._delegation.run(session, command.args, apart=apart)
        if command.name == "help":
            return self._help(session)
        plugin = self._plugins[command.name]
        context = {"session": session.key, "user_id": inbound.user_id}
        try:
            if inspect.iscoroutinefunction(plugin.handler):
                out = await plugin.handler(command.args, context)
            else:  # a plain function may block (a synchronous HTTP call): never on the event loop
                call = functools.partial(contextvars.copy_context().run, plugin.handler, command.args, context)
                out = await asyncio.wrap_future(self._threads.submit(
                    f"command /{command.name} (plugin {plugin.plugin})", call, _chat_of(session)))
            if inspect.isawaitable(out):
                out = await out
            text = "" if out is None else str(out)
            # Always an answer: a slash command's "thinking…" waits for one (Discord's for 15 minutes).
            return text if text.strip() else "Done."
        # SystemExit: a plugin's sys.exit(), which raised on would stop the gateway; its command failed.
        except (Exception, SystemExit) as exc:
            log.exception("command /%s from plugin %s failed", command.name, plugin.plugin)
            return f"/{command.name} failed: {type(exc).__name__}."

    def close(self) -> None:
        """Shutdown: plain plugin handlers not started yet never start (their events run again after
        the next start); one still running is logged and left to return in its thread, which cannot be
        stopped and which the process does not wait for."""
        self._threads.close()

    async def _stop(self, session: GatewaySession, args: str, inbound: Inbound) -> str:
        note = [STOP_ARGS_NOTE] if args else []
        delivering = _delivering(session)
        # Its reply is being journaled (split first): no stop reaches it (`SessionRegistry.stop_turn`); else stopped.
        running = session.running.turn_id if session.running is not None else None
        spared = self._later_turn(session, inbound)
        # What the turns of messages sent after it launched, ended or not, is not what it was meant to stop.
        origins = self._ledger.running_origins(session.session_id)
        ended = self._later_ended_turns(session, inbound, {*origins.values()})
        later = ended | {spared} if spared is not None else ended
        going_on = sum(1 for c in self._children.children(session.session_id) if c.parent_turn_id in ended)
        # Another member's results that are ready wait for a turn as their messages do: kept, as those are.
        theirs = self._ledger.ready_for_others(session, inbound)
        stopped = self._registry.stop(session, "stopped by /stop", drops=self._drops(inbound), turn=spared is None,
                                      keeps={*theirs, *(d for d, turn in origins.items() if turn in later)},
                                      by=inbound)
        # Their results will not be delivered.
        finished = self._ledger.suppress(session.session_id, "/stop", delivering=delivering, sparing_turns=later,
                                         ended=_owed_outcomes(session), sparing=theirs, by=inbound,
                                         stopped_turn=running if stopped.turn else None)
        children = await self._children.interrupt_children(session.session_id, "stopped by /stop",
                                                           sparing_turns=later)
        # Answered once their stop is committed: "Stopped" while it was only queued, a crash right after left the
        # children running in the journal, lost to the restart, and on_restart: resume ran them again.
        saved = not children or await self._children.stops_committed()
        await asyncio.sleep(0)
        if running is not None:
            # The reply goes first, as the turn answered before this /stop could stop it: journaled first,
            # "Nothing was running." came before the answer it had not stopped, as if it had stopped none. Stopped,
            # its typing request on the wire goes first: landing after, it showed "typing…" under "Stopped.".
            await self._reply_journaled(running)
        went_on = [STOP_SENT_BEFORE] if spared is not None else []
        if going_on:
            went_on.append(stop_spared(going_on))
        kept = [*_kept(self._others(inbound, stopped.kept)), *_kept_results(len(theirs))]
        if not stopped.turn and not children and not stopped.dropped and not finished:
            elsewhere = _at_work_in_threads(session.platform, self._threads_at_work(session))
            return " ".join([*(went_on or ["Nothing was running.", *elsewhere]), *kept, *note])
        parts = ["the running turn"] if stopped.turn else []
        if children and saved:
            parts.append(counted(children, "subagent"))
        said = [f"Stopped {' and '.join(parts)}."] if parts else []
        if children and not saved:
            said.append(stop_not_saved(children))
        if children:
            said.append("The subagent's partial result is listed by /agents." if children == 1
                        else "Their partial results are listed by /agents.")
        if finished:
            said.append(_undelivered(finished) + ": /agents lists them.")
        return " ".join([*said, *went_on, *_dropped(stopped.dropped), *kept, *note])

    async def chat_lost(self, platform: str, chat_id: str, why: str, thread_id: str | None = None) -> None:
        """The bot can no longer write to the chat (`platforms.base.ChatLost`): in each of its sessions in memory
        (its threads too; with ``thread_id``, that thread's session alone) the running turn and the children are
        stopped and the background results not delivered yet dropped, as ``/stop`` stops them, and every message
        waiting for its turn is dropped, any member's: answered, each would be refused, after a model call spent on
        it. Nothing is said in the chat, which takes nothing; one line of the log says what was stopped. Raises what
        the store refuses of a stop (a full disk), before it changed that session: asked again, it stops what is
        left."""
        turns = children = dropped = finished = 0
        for session in self._registry:
            if session.platform != platform or session.chat_id != chat_id:
                continue
            if thread_id is not None and session.thread_id != thread_id:
                continue
            delivering = _delivering(session)
            stopped = self._registry.stop(session, why, drops=every)
            finished += self._ledger.suppress(session.session_id, why, delivering=delivering,
                                              ended=_owed_outcomes(session))
            children += await self._children.interrupt_children(session.session_id, why)
            turns, dropped = turns + stopped.turn, dropped + stopped.dropped
        if children:
            await self._children.stops_committed()  # logs a failure itself; the journal writes the stops once it can
        ended = [*(["the running turn"] if turns == 1 else [counted(turns, "running turn")] if turns else []),
                 *([counted(children, "subagent")] if children else [])]
        left = [*([counted(dropped, "waiting message")] if dropped else []),
                *([counted(finished, "finished background task")] if finished else [])]
        done = "; ".join([*([f"stopped {' and '.join(ended)}"] if ended else []),
                          *([f"dropped {' and '.join(left)}"] if left else [])])
        # Nothing under way is the usual case of a channel the bot never talked in (Slack tells of every public
        # channel archived): not a line at INFO each.
        where = chat_id if thread_id is None else f"{chat_id} thread {thread_id}"
        log.log(logging.INFO if done else logging.DEBUG, "%s chat %s can no longer be written to (%s): %s",
                platform, where, why, done or "nothing was under way there")

    async def _new(self, session: GatewaySession, inbound: Inbound) -> str:
        """A new generation with its mode re-resolved; the old one's work ends and none of its
        results reach the new one (other members' waiting messages do: they are answered in it).
        Not while a turn answers a message sent after the ``/new`` (handed over late): resetting the
        session under it would end the turn of a message meant for the new session, or answer it in
        one that forgets it."""
        if self._later_turn(session, inbound) is not None:
            return NEW_SENT_BEFORE
        # Nor under the exchanges of messages sent after it, which the new session would forget; one
        # steered into the turn and not read yet is not answered: the new session answers it.
        unread = {event.event_id for event in unread_steered(session)}
        if answered := len({event.event_id for event in session.heard
                            if event.event_id not in unread and self._sent_before(inbound, event)}):
            return new_sent_before_answered(answered)
        delivering = _delivering(session)
        # Its reply is being journaled (split first): no stop reaches it (`SessionRegistry.stop_turn`); else stopped.
        running = session.running.turn_id if session.running is not None else None
        old_id, stopped = self._registry.new_generation(session, drops=self._drops(inbound), by=inbound)
        finished = self._ledger.suppress(old_id, "/new", delivering=delivering, by=inbound,
                                         stopped_turn=running if stopped.turn else None)
        ended = await self._children.interrupt_children(old_id, "session reset by /new")
        # Answered once their stop is committed, as /stop's: "ended" while it was only queued, a crash right after
        # left the old session's children running in the journal, lost to the restart, and on_restart: resume ran
        # them again.
        saved = not ended or await self._children.stops_committed()
        if running is not None:
            # The old session's answer goes first: after "Started a new session." it read as the new session's. Or,
            # stopped, its typing request on the wire: landing after, it showed "typing…" under the new session's.
            await self._reply_journaled(running)
        extra = f" and ended {counted(ended, 'subagent')}" if ended and saved else ""
        unsaved = [stop_not_saved(ended)] if not saved else []
        results = [_undelivered(finished) + "."] if finished else []
        kept = _kept(self._others(inbound, stopped.kept), " in the new session")
        apart = [_new_apart(session.platform)] if self._threads_apart(session, inbound) else []
        return " ".join([f"Started a new session{extra}.", *unsaved, *results, f"Delegation here is {session.mode}.",
                         *_dropped(stopped.dropped), *kept, *apart])

    def _threads_at_work(self, session: GatewaySession) -> int:
        """At a chat's top level, how many of its threads (or topics) have a turn or subagents at work: a stop
        there reaches none of them, and a Slack slash command can only be typed there, never in a thread."""
        return sum(1 for other in self._thread_sessions(session)
                   if (other.running is not None and not other.running.suppressed)
                   or self._children.children(other.session_id))

    def _thread_sessions(self, session: GatewaySession) -> list[GatewaySession]:
        """At a chat's top level, the sessions of its threads (or topics) in memory, each a session of its own that a
        command there does not reach; none in a thread."""
        if session.thread_id is not None:
            return []
        return [other for other in self._registry if other.platform == session.platform
                and other.chat_id == session.chat_id and other.thread_id is not None]

    def _threads_apart(self, session: GatewaySession, inbound: Inbound) -> bool:
        """Whether ``/new`` or ``/delegation`` sent at a chat's top level is to say that its threads (or topics) do not
        follow it. In a Slack channel always: every conversation there runs in a thread (those no longer in memory
        too), while Slack takes slash commands only at the top level.
        Elsewhere (Telegram's General topic, a Discord channel) the top level is a conversation too: only while
        threads of the chat are in memory."""
        if session.thread_id is not None:
            return False
        return self._no_conversation(session, inbound) or bool(self._thread_sessions(session))

    @staticmethod
    def _no_conversation(session: GatewaySession, inbound: Inbound) -> bool:
        """Whether ``inbound`` came at a Slack channel's top level, where only slash commands reach the gateway: a
        mention there starts a thread, the conversation, and nothing else said there is heard."""
        return session.platform == "slack" and session.thread_id is None and not inbound.is_private

    def _later_turn(self, session: GatewaySession, command: Inbound) -> str | None:
        """The running turn's id if it answers a message sent after ``command``: a command sent while
        the gateway was down and handed over after the restart behind newer messages (Slack's and
        Discord's catch-up beside live events, Telegram's backlog) was not meant for that turn. A turn
        delivering background results answers the message that asked for them."""
        running = session.running
        if running is None or running.suppressed:
            return None
        event = running.event
        if event is None and running.delegation_id is not None:
            origin = self._ledger.running_origins(session.session_id).get(running.delegation_id)
            event = self._turn_event(session.platform, origin) if origin is not None else None
        return running.turn_id if self._sent_before(command, event) else None

    def _later_ended_turns(self, session: GatewaySession, command: Inbound, turns: set[str]) -> set[str]:
        """Of ``turns`` and the turns that launched the session's live children, those that have
        ended and answered a message sent after ``command``: a late ``/stop`` leaves what they
        launched going on, as it leaves the running turn of such a message (`_later_turn`). A turn
        whose message the inbox no longer remembers, or that answered none (a background
        delivery), does not count."""
        running = session.running.turn_id if session.running is not None else None
        candidates = turns | {c.parent_turn_id for c in self._children.children(session.session_id)}
        return {turn_id for turn_id in candidates - {running}
                if self._sent_before(command, self._turn_event(session.platform, turn_id))}

    def _drops(self, stopper: Inbound) -> Drops:
        """Which waiting messages a stop from ``stopper`` drops: those not sent after it (a message
        sent after it was not what it meant to stop, though handed over first), and in a group, channel
        or thread only the stopper's own, as each member's message is a request of their own (one
        member's stop must not cost another theirs); in a private chat every one."""
        def drops(event: Inbound) -> bool:
            mine = stopper.is_private or event.user_id == stopper.user_id
            return mine and not self._sent_before(stopper, event)
        return drops

    @staticmethod
    def _others(stopper: Inbound, kept: tuple[Inbound, ...]) -> int:
        """How many of the messages a stop left waiting are other members' (in a group)."""
        return 0 if stopper.is_private else sum(1 for event in kept if event.user_id != stopper.user_id)

    def _help(self, session: GatewaySession) -> str:
        # An adapter may serve commands of its own (the terminal's /quit): listed too, where they work.
        adapter = self._adapters.get(session.platform)
        own = adapter.own_commands if isinstance(adapter, OwnCommands) else ()
        lines = [f"/{c.name} — {c.description}" for c in (*self.specs(), *own)]
        aliases = "; ".join(f"/{alias} is /{name}" for alias, name in ALIASES.items())
        lines.append(f"Also as !stop and !new (where slash commands are unavailable); {aliases}.")
        return "\n".join(lines)


def _chat_of(session: GatewaySession) -> str:
    """Whose share of the plugin command threads a call holds (the session's chat, or thread), as the log names it."""
    thread = f" thread {session.thread_id}" if session.thread_id is not None else ""
    return f"{session.platform} chat {session.chat_id}{thread}"


def _undelivered(n: int) -> str:
    """A stop's word on background results that were ready when it came: no child of theirs was
    left to stop, and without this the chat would never hear of them."""
    tasks = "finished background task" if n == 1 else "finished background tasks"
    return f"The results of {n} {tasks} will not be delivered"


def _dropped(n: int) -> list[str]:
    """What to tell a chat whose waiting messages a stop dropped (nothing when none was)."""
    if not n:
        return []
    if n == 1:
        return ["Dropped 1 message that was waiting for its turn: send it again to have it answered."]
    return [f"Dropped {n} messages that were waiting for their turn: send them again to have them answered."]


def _in_a_thread(platform: str, name: str) -> tuple[str, str]:
    """What the platform calls a chat's thread, and how command ``name`` is typed in one."""
    # Slack takes no slash command in a thread.
    return "topic" if platform == "telegram" else "thread", f"{'!' if platform == 'slack' else '/'}{name}"


def _at_work_in_threads(platform: str, n: int) -> list[str]:
    """What a ``/stop`` that found nothing at a chat's top level says of the ``n`` threads at work there: else
    "Nothing was running." read as false while a colleague's turn visibly goes on in a thread."""
    if not n:
        return []
    thread, stop = _in_a_thread(platform, "stop")
    if n == 1:
        return [f"Work goes on in 1 {thread} of this chat, which a stop here does not reach: send {stop} in that "
                f"{thread} to stop it."]
    return [f"Work goes on in {n} {thread}s of this chat, which a stop here does not reach: send {stop} in a "
            f"{thread} to stop its work."]


def _new_apart(platform: str) -> str:
    """``/new``'s word, at a chat's top level, on its threads: each goes on with its conversation."""
    thread, new = _in_a_thread(platform, "new")
    return (f"The {thread}s of this chat are sessions of their own, which a /new here does not reach: send {new} "
            f"in a {thread} to start it afresh.")


def _delegation_apart(platform: str) -> str:
    """``/delegation``'s word, at a chat's top level, on its threads: each keeps the backend it has."""
    thread, delegation = _in_a_thread(platform, "delegation")
    return (f"The {thread}s of this chat are sessions of their own, which do not follow /delegation here: send "
            f"{delegation} in a {thread} to see or switch its backend.")


def _kept(n: int, where: str = "") -> list[str]:
    """What to tell a group whose other members' waiting messages a stop left to be answered."""
    if not n:
        return []
    if n == 1:
        return [f"1 message from another member still waits for its turn: it is answered next{where}."]
    return [f"{n} messages from other members still wait for their turn: they are answered next{where}."]


def _kept_results(n: int) -> list[str]:
    """What to tell a group whose other members' ready background results a ``/stop`` left to be delivered."""
    if not n:
        return []
    if n == 1:
        return ["The results of 1 finished background task another member asked for are delivered as usual."]
    return [f"The results of {n} finished background tasks other members asked for are delivered as usual."]


def _owed_outcomes(session: GatewaySession) -> set[str]:
    """The delegations whose completion turns ended, the store having refused their outcome (owed,
    `gateway.owed_ends`): what became of their results is told, and recorded once it is paid."""
    return {end.outcome[0] for end in session.owed if end.outcome is not None}


def _delivering(session: GatewaySession) -> str | None:
    """The delegation whose results the running turn is journaling now (`RunningTurn.replying`):
    past any stop, they are delivered."""
    running = session.running
    return running.delegation_id if running is not None and running.replying else None
