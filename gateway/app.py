"""The gateway: chats in, agent turns and children in the middle, durable messages out.

`Gateway` keeps intake and its own start and stop; everything else has one owner it
wires together here: sessions (`SessionRegistry`), turns (`TurnRunner`), commands,
the ledger of background delegations, retention and the outbox. Each inbound event passes a short
chain — dedup through the durable inbox, the access check, commands (handled at once,
also mid-turn), then the busy-input policy — and lands in its session's queue.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from agent import SYSTEM_CLOCK, AgentSession, Clock, Tool
from gateway import long_messages
from gateway.access import REFUSAL, allowed, refused_user
from gateway.chat_intake import ChatIntake, Replays
from gateway.chat_services import ChatServices
from gateway.command_answers import CommandAnswers, answer_key
from gateway.commands import ANSWERED_AT_ONCE, Command, Commands
from gateway.console.recent_errors import RecentErrors
from gateway.dead_letters import DeadLetterPolicy
from gateway.delegation_cards import DelegationCards
from gateway.display import DisplayResolver
from gateway.events import GatewayEvents
from gateway.file_sends import FileSends
from gateway.host import AgentHost
from gateway.ledger import Ledger
from gateway.left_behind import STUCK_WAIT_SECONDS, cancel_within, describe, left_for_next_start
from gateway.left_indicators import LeftIndicators
from gateway.log_repeats import alike
from gateway.logging import redact
from gateway.message_edits import MessageEdits
from gateway.metrics import GatewayMetrics
from gateway.outbox import Outbox
from gateway.outbox_files import FOLDER as OUTBOX_FILES
from gateway.outbox_files import OutboxFiles
from gateway.owed_ends import reply_journaled
from gateway.questions import FILE_WAITS, Questions
from gateway.refusals import QUIET_SECONDS, Refusals
from gateway.retention import Retention
from gateway.session_registry import SessionRegistry
from gateway.sessions import ChatKey, GatewaySession, Heard, Mode, RunningTurn, WorkItem, new_turn_id
from gateway.store import GatewayStore, OutboxRow, session_key, split_session_key
from gateway.store.checkpointer import Checkpointer
from gateway.telemetry import build_tracing
from gateway.turn_progress import finish_left
from gateway.turn_reads import origin_of, origin_turn, private_chat, read_turn
from gateway.turn_runner import TRACKS_TURN_IDS, TurnRunner
from gateway.unconfigured import configured, keep_unconfigured
from lifecycle import JournalError
from platforms.base import (
    Accepted,
    Adapter,
    CatchesUp,
    CommandSpec,
    HearsDeletions,
    HearsEdits,
    HearsRefusals,
    HistoryReading,
    Inbound,
    LeavesIndicators,
    MovesChats,
    NamesOrigins,
    OperatorScreen,
    RemembersAnswers,
    StopsWithin,
    ThreadMemory,
    TurnRead,
    TurnReading,
)
from platforms.connection import NO_CONNECTION, ConnectionState, Connects
from platforms.not_recorded import NotYetDurable, storage_refusal
from platforms.repeated_warnings import tell_counted

log = logging.getLogger("gateway.app")

REMEMBERED_THREADS = 10_000
"""Thread sessions handed to an adapter that answers in threads without a mention (Slack, Discord) at start."""
CLOSE_FLOOR_SECONDS = 1.0
"""What closing the children's engine gets at a stop when the grace is spent: the requests it still sends
(on Temporal, the workflow starts of children launched just before) take milliseconds while Temporal
answers, and get this long to be sent; past it they are left to the next start."""
_NOT_ROUTED = object()
"""`Gateway._handle_accepted` called without the event's route: it routes the event itself."""


class Gateway:
    def __init__(self, host: AgentHost, adapters: Sequence[Adapter], *, store: GatewayStore | None = None,
                 clock: Clock = SYSTEM_CLOCK, tracer_provider: object | None = None) -> None:
        """``tracer_provider``: an OpenTelemetry ``TracerProvider`` to trace on instead of the one
        ``telemetry.otlp_endpoint`` asks for (the caller keeps it: it is not shut down here)."""
        self.host = host
        self.config = host.config
        self.clock = clock
        self.refusals = Refusals(clock)
        """Who was refused lately where, so a chatty stranger is not refused at every message."""
        self.adapters: dict[str, Adapter] = {a.name: a for a in adapters}
        self.store = store or GatewayStore(db=host.database, clock=clock)
        self.events = GatewayEvents()
        """What happens, for metrics, traces and the console (`gateway.events`)."""
        webhook = self.config.platforms.webhook
        kept = OutboxFiles(host.state_dir / OUTBOX_FILES)
        self.outbox = Outbox(self.store.outbox, self.adapters, max_retry_after=self.config.delivery.max_retry_after,
                             clock=clock, give_up_after={"webhook": webhook.retry_for_seconds}, events=self.events,
                             late_after=self.config.delivery.late_after,
                             files=kept, unspent=self._quote_unspent,
                             max_parts=functools.partial(long_messages.max_parts, self.config))
        self.display = DisplayResolver(self.config, {name: a.tier for name, a in self.adapters.items()})
        self.sessions = SessionRegistry(self.store.sessions, new_agent=self._new_agent, mode_for=self.display.mode,
                                        clock=clock, ended=lambda *ended: self.runner.ended_early(*ended),
                                        backend_for=lambda: self.config.delegation.backend,
                                        delegate_for=self._delegate_for, available=host.routing.available,
                                        waits_again=lambda event: self.store.inbox.reopen(event.platform,
                                                                                           event.event_id))
        self.questions = Questions(self.outbox, self.store.inbox, self.sessions, clock,
                                   self.config.agent.clarify_timeout_seconds, durable=self.store.durable,
                                   private=functools.partial(private_chat, self.store),
                                   busy=lambda session, running: host.children.runs_here(session.session_id,
                                                                                          running.turn_id),
                                   completion_waits=lambda *waits: self.ledger.completion_waits(*waits))
        services = ChatServices(self.sessions, self.outbox)
        self._chat_services = {"send_message": services.send_message,
                               "send_file": FileSends(self.sessions, self.outbox, kept, self.adapters).send_file,
                               "clarify": self.questions.ask, "note_key": services.note_key}
        """The services of every chat's parent agent: each finds its chat from the calling turn."""
        self.runner = TurnRunner(self.sessions, self.outbox, self.store.inbox, children=host.children,
                                 display=self.display.turn, adapters=self.adapters, clock=clock,
                                 completion_ended=lambda *ended: self.ledger.completion_ended(*ended),
                                 model=self.config.model, events=self.events,
                                 late_after=self.config.delivery.late_after, durable=self.store.durable,
                                 transaction=self.store.db.transaction,
                                 failed=lambda *failed: self.dead_letters.failed(*failed),
                                 completion_begun=lambda delegation_id: self.ledger.completion_begun(delegation_id),
                                 completion_failed=lambda *failed: self.ledger.completion_failed(*failed),
                                 abandoned=lambda session, turn_id: self.ledger.abandon(session, turn_id))
        self._cards = DelegationCards(self.outbox, host.children, self.store.delegations, display=self.display.turn,
                                      clock=clock)
        self.ledger = Ledger(self.store, self.sessions, self.runner, host.children, self.outbox, self._cards,
                             settings=self.config.lifecycle, clock=clock,
                             delivery_attempts=self.config.inbox.max_attempts)
        self.commands = Commands(self.sessions, host.children, self.ledger, host.plugins.commands,
                                 adapters=self.adapters, clock=clock, sent_before=self._sent_before,
                                 turn_event=self.store.inbox.event_of_turn,
                                 routing=host.routing, reply_journaled=self.runner.reply_journaled)
        self.retention = Retention(self.store, self.sessions, host.children, clock=clock,
                                   pay_owed=self.runner.pay_owed, files=kept,
                                   forget_sessions_after=self.config.sessions.retention_days * 24 * 3600)
        self._delegates: dict[tuple[Mode, str], Tool | None] = {}
        self.dead_letters = DeadLetterPolicy(self.store.inbox, self.outbox, max_attempts=self.config.inbox.max_attempts,
                                             clock=clock, handle=self._handle_again, platforms=self.adapters)
        self._checkpointer = Checkpointer(self.store.db)
        self.metrics = GatewayMetrics(store=self.store, sessions=self.sessions, children=host.children,
                                      platforms=self.adapters, clock=clock, connections=self.connections)
        self.tracing = build_tracing(self.config.telemetry, provider=tracer_provider,
                                     provider_name=self.config.model.provider, request_model=self.config.model.name,
                                     origin_of=functools.partial(origin_of, self.store))
        for watcher in (self.metrics, self.tracing):
            if watcher is not None:
                self.events.subscribe(watcher)
                watcher.hooks(host.hooks)
        self.recent_errors = RecentErrors(repeat_window=self.config.logging.repeat_window_seconds)
        """The latest warnings and errors logged, for the operator console."""
        self._accepting = False
        self._run_begun = False
        """Whether this start recorded its run (`GatewayStore.begin_run`): only then may its stop record it ended."""
        self._replays = Replays(self._handle_accepted)
        """The chats whose replayed events the start has not queued yet: their new events wait behind them."""
        self._background: list[asyncio.Task] = []
        self._answers = CommandAnswers(self.outbox, self.store.inbox, self.commands, self.dead_letters,
                                       accepting=lambda: self._accepting, clock=clock)
        self._intake = ChatIntake()
        self.edits = MessageEdits(self.sessions, self.store.inbox, self._intake, self._replays,
                                  is_command=lambda text: self.commands.parse(text) is not None,
                                  durable=self._recorded_durably, before_waiting=self._durable_before_waiting,
                                  accepting=lambda: self._accepting, not_beginning=self.runner.not_beginning,
                                  queue_changed=self.runner.queue_changed)
        """Users' edits and deletions of their messages waiting for their turns (`gateway.message_edits`)."""
        self._left_indicators = LeftIndicators(self.store, self.adapters)
        for adapter in self.adapters.values():
            if isinstance(adapter, TurnReading):  # the webhook platform's GET reads the outbox
                adapter.bind_turn_reader(self._read_turn)
            if isinstance(adapter, NamesOrigins):  # a webhook delivery names the request it answers
                adapter.bind_turn_origin(functools.partial(origin_turn, self.store))
            if isinstance(adapter, HistoryReading):  # the web chat shows a chat again from the store
                adapter.bind_history_reader(self.store.chat_history.messages)

    # -- lifetime -------------------------------------------------------------------------

    async def start(self) -> None:
        """A start that raises must still be followed by `stop`, as `serve` does: it may have begun
        the host and attached the console's log handler to the root logger."""
        self.recent_errors.attach()
        await self.host.start()
        unsent = self.store.outbox.pending_chats()  # read before the outbox sends any of it
        left = self.store.indicators_left.chats()  # before an adapter starts and records more
        # Logged too, but the terminal chat's log is a file: its user would not know why /ping is no command.
        problems = [redact(f"plugin {failure.module} did not load: {failure.reason}")
                    for failure in self.host.plugins.failures]
        for adapter in self.adapters.values():
            if isinstance(adapter, OperatorScreen):  # greeted before the outbox prints what a last chat left
                adapter.show_start_problems(problems)
                adapter.greet()
        await self.outbox.start()
        self._recall_refusals()  # before any event is handled, new or replayed
        # Taken before any platform starts: an event a platform hands over while a later one still
        # starts is unsettled too, but already being handled; replayed, it would run twice. Not one of a
        # platform no longer configured: kept as it is for a start that configures it (`gateway.unconfigured`).
        opened = [(event, turn_id) for event, turn_id in self.store.inbox.unfinished()
                  if event.platform in self.adapters]
        begun = self.store.inbox.begun()
        # The last gateway died: that counts as an attempt of each event whose turn had begun; one still
        # waiting for its turn (queued behind a slow one) had no part in it.
        before_stopped_cleanly = self.store.begin_run()
        if before_stopped_cleanly:
            # The completion turns the stop cut short keep their place (`resume_first`), but this process dying
            # before one begins again is no fault of it. Made durable with the run's begin, before any platform.
            self.store.delegations.carry_over_deliveries()
        self._run_begun = True
        replayed = opened if before_stopped_cleanly else [
            (event, turn_id) for event, turn_id in opened
            if (event.platform, event.event_id) not in begun or self.dead_letters.cut_short(event)]
        for event, _ in replayed:
            self.store.inbox.reopen(event.platform, event.event_id)
        self._finish_set_aside(opened, replayed)
        unfinished = [*replayed, *self.store.inbox.take_requeued(of=self.adapters)]
        # Queued only once the platforms have started, when an edit made meanwhile may have come already. Not one
        # whose turn had begun though no longer marked so (`Inbox.reopen`), and asked the chat a question or answered
        # it (`gateway.owed_ends`), a message steered into it and read there too (`Inbox.read_into`): deleted, the
        # question was left waiting with no turn to take its answer, also once queued again behind a completion turn.
        shown = {turn_id for _, turn_id in unfinished if turn_id and self._turn_shown(turn_id)}
        self.edits.replaying((event for event, turn_id in replayed if (event.platform, event.event_id) not in begun
                              and turn_id not in shown), too_late=(event for event, turn_id in unfinished
                                                                   if turn_id in shown))
        running = self.store.delegations.running()
        # Before the first await: the outbox started above has sent nothing yet.
        pending = self.store.outbox.pending_messages()
        self.questions.drop_left_unsent(pending, {
            *(turn_id for _, turn_id in unfinished if turn_id),
            *(row.completion_turn_id for row in running if configured(row, self.adapters))})
        keep_unconfigured(self.store, self.adapters, pending, running)
        await self.store.durable()  # a crash from here on is charged to what runs now
        self._accepting = True
        specs = self.command_specs()
        # A newer event of the chats replayed below that a platform started first hands over meanwhile, a command
        # too, is queued after them (`Replays`): handled first, it was answered before them. So is one of a chat
        # replaying none whose completion turn was running or queued (`ahead`): sent while the gateway was down,
        # it came after those results.
        replayed_chats = [session_key(event.platform, event.chat_id, event.thread_id) for event, _ in unfinished]
        placed = self.store.delegations.deliveries_running() | self.store.delegations.delivery_places().keys()
        ahead = {row.session_key for row in running
                 if row.delegation_id in placed and configured(row, self.adapters)}.difference(replayed_chats)
        self._replays.due([*replayed_chats, *ahead])
        for adapter in self.adapters.values():
            if isinstance(adapter, ThreadMemory):
                adapter.remember_threads(self.store.sessions.recent_threads(adapter.name, REMEMBERED_THREADS))
            if isinstance(adapter, LeavesIndicators):
                adapter.bind_indicators_left(self._left_indicators.told(adapter.name))
            if isinstance(adapter, CatchesUp):
                adapter.bind_last_seen(self.store.last_seen.of(adapter.name),
                                       functools.partial(self.store.last_seen.record, adapter.name),
                                       functools.partial(self.store.last_seen.at, adapter.name))
            if isinstance(adapter, MovesChats):
                adapter.bind_chat_moves(self.store.chat_moves.of(adapter.name),
                                        functools.partial(self._chat_moved, adapter.name))
            if isinstance(adapter, HearsEdits):
                adapter.bind_edits(self.edits.edited)
            if isinstance(adapter, HearsDeletions):
                adapter.bind_deletions(self.edits.deleted)
            if isinstance(adapter, RemembersAnswers):
                adapter.bind_answers(functools.partial(self.store.outbox.sent_answer, adapter.name))
            await adapter.start(self.handle, specs)
            log.info("platform %s started", adapter.name)
        undelivered = [row for row in self.store.delegations.running() if configured(row, self.adapters)]
        # As for the events above: a completion turn that died with the process is charged an attempt, so one
        # that brings it down is not replayed into every start; given up on, its results go out as they are.
        gave_up: set[str] = set()
        # Read before `cut_short` lifts their marks: waiting for an answer, or carried over from a clean stop, too.
        running_deliveries = self.store.delegations.deliveries_running()
        if not before_stopped_cleanly:
            begun_deliveries = self.store.delegations.deliveries_begun()
            for row in undelivered:
                if row.delegation_id in begun_deliveries and not await self.ledger.cut_short(row):
                    gave_up.add(row.completion_turn_id)
        self._background += self._left_indicators.clear(
            {(e.platform, e.chat_id, e.thread_id) for e, _ in (*opened, *unfinished)} |
            {split_session_key(row.session_key) for row in undelivered} | unsent | left, recorded=left)
        # They start over: the events' turns, and the completion turns of undelivered delegations
        # (one that had begun may have delegated already).
        replays = {turn_id for _, turn_id in unfinished if turn_id} | {row.completion_turn_id for row in undelivered
                                                                       if row.completion_turn_id not in gave_up}
        await self._cards.finish_owed()  # those the processes before could not finish
        # Their children stopped before the turns launch new ones; those of completion turns given up on too.
        await self.ledger.forget_replayed(replays | gave_up)
        self.runner.replaying(replays)
        # A completion turn that was running, or queued, in a chat replayed here runs again where it was: ahead of
        # the messages that came after its results (all of them, for one that was running), whose turns read its
        # results, as they would have before the restart.
        last = {session_key(event.platform, event.chat_id, event.thread_id): n
                for n, (event, _) in enumerate(unfinished)}
        in_place = self.ledger.places([row for row in undelivered if row.completion_turn_id not in gave_up
                                       and (row.session_key in last or row.session_key in ahead)], running_deliveries)
        for key in ahead:
            await self.ledger.resume_first(in_place.rest(key))
            await self._replays.queued(key)
        replayed_turns: set[tuple[str, str]] = set()
        to_replay = Counter(turn_id for _, turn_id in unfinished if turn_id)
        for n, (inbound, turn_id) in enumerate(unfinished):
            key = session_key(inbound.platform, inbound.chat_id, inbound.thread_id)
            if key in in_place:
                await self.ledger.resume_first(
                    in_place.before(key, self.store.inbox.arrival(inbound.platform, inbound.event_id)))
            log.info("resuming %s event %s received before a restart", inbound.platform, inbound.event_id)
            replayed_as = self.edits.replayed(inbound)
            if turn_id:
                to_replay[turn_id] -= 1
            if replayed_as is None:  # its user deleted it meanwhile: settled, never to begin
                # Its turn neither, unless another event of it was handed on, or is still to be.
                if turn_id and not to_replay[turn_id] and (key, turn_id) not in replayed_turns:
                    self.runner.not_beginning(turn_id)
            elif turn_id and (key, turn_id) in replayed_turns and turn_id in shown:
                # Steered into that turn, whose answer or question (in the chat) read it (`Inbox.read_into`): read by
                # its run again, which asks that question again.
                self.runner.read_on_replay(turn_id, WorkItem("message", replayed_as.text, turn_id, replayed_as))
            else:
                await self._handle_accepted(replayed_as, turn_id)  # never raises: no stored event can stop a start
            # Not one given a turn of its own (`TurnRunner._own_turn`): its turn's message, handed back behind it,
            # begins that turn, rather than steer into a turn that never begins.
            if turn_id and replayed_as is not None and not self.runner.ran_apart(replayed_as):
                replayed_turns.add((key, turn_id))
            if n == last[key]:  # ahead of the chat's new events, which wait behind its replayed ones
                await self.ledger.resume_first(in_place.rest(key))
            await self._replays.queued(key)
        await self.ledger.resume(self.adapters)
        self._background += [asyncio.ensure_future(self.retention.run_forever()),
                             asyncio.ensure_future(self.dead_letters.watch_requeued())]
        self._checkpointer.start()

    async def _chat_moved(self, platform: str, chat_id: str, moved_to: str) -> None:
        """The platform gave the chat a new id: stored durably before the adapter acts on it, so
        that after a restart too the new chat's messages reach the chat's session."""
        self.store.chat_moves.record(platform, chat_id, moved_to)
        await self.store.durable()

    def _turn_shown(self, turn_id: str) -> bool:
        """Whether the chat has the turn's question or answer (`gateway.owed_ends`): its messages are too late to
        drop or change after a restart."""
        return bool(self.outbox.texts_under(f"{turn_id}:ask:")) or reply_journaled(self.outbox, turn_id)

    def _finish_set_aside(self, opened: list[tuple[Inbound, str | None]],
                          replayed: list[tuple[Inbound, str | None]]) -> None:
        """The progress messages of the turns the last process died in whose messages are not run again (set
        aside, charged with that death) would read ⏳ for good: finalised as failed (`turn_progress.finish_left`)."""
        again = {(event.platform, event.event_id) for event, _ in replayed}
        for event, turn_id in opened:
            if turn_id is None or (event.platform, event.event_id) in again:
                continue
            try:
                finish_left(self.outbox, (event.platform, event.chat_id, event.thread_id), turn_id,
                            self.display.turn(event.platform))
            except Exception as exc:  # the message is decoration: the start goes on
                log.warning("finishing the progress message of turn %s failed (%s: %s)", turn_id,
                            type(exc).__name__, exc)

    def _recall_refusals(self) -> None:
        """The refusals the last processes gave in the last `QUIET_SECONDS`, from what they journaled:
        a user refused there is not refused again, also for a message replayed from before."""
        now = self.clock.time()
        for row in self.store.outbox.journaled_since(now - QUIET_SECONDS, kind="command"):
            if (user_id := refused_user(row.text)) is not None:
                self.refusals.told(row.platform, row.chat_id, row.thread_id, user_id, max(0.0, now - row.created_at))

    async def stop(self, grace: float | None = None) -> None:
        """Stop intake (an adapter that waits on its platform at its stop, `StopsWithin`, within the grace),
        let running turns finish, then interrupt them; flush the outbox, then close the clients the
        `StopsWithin` adapters send with (kept open until then, so the replies of the turns that end
        within the grace go out); journal running children as interrupted. All of it within ``grace``
        seconds (a supervisor's stop timeout is set to it): the flush gets what the turns left of it,
        and parts it had no time for stay pending for the next start; then the children's engine gets
        what is left for the requests it still sends (at least `CLOSE_FLOOR_SECONDS`), and leaves the
        rest to the next start. With no grace at all the flush still gets a second."""
        loop = asyncio.get_running_loop()
        grace = self.config.server.shutdown_grace_seconds if grace is None else grace
        deadline = loop.time() + grace
        self._accepting = False
        self.runner.stop_began()
        for task in self._background:
            task.cancel()
        if self._background:
            await asyncio.wait(self._background)
        self._background = []
        await self.dead_letters.close()
        await self._checkpointer.stop()
        for adapter in self.adapters.values():
            try:
                if isinstance(adapter, StopsWithin):
                    await adapter.stop_within(max(deadline - loop.time(), 0))
                else:
                    await adapter.stop()
            except Exception:
                log.exception("stopping %s failed", adapter.name)
        self.runner.stop_taking()  # nothing queued starts: the turns running get the grace, and plugin commands
        # Their tries again are cancelled (`dead_letters.close`): else the next start ran those commands again.
        self._answers.journal_kept()
        running = [*self.runner.busy, *self._answers.aside]
        if running:
            await asyncio.wait(running, timeout=max(deadline - loop.time(), 0))
        # Unanswered: handled again after the next start; one that ignores its cancellation is left behind.
        for task in await cancel_within(list(self._answers.aside), max(deadline - loop.time(), STUCK_WAIT_SECONDS)):
            log.error("a plugin command did not end within its stop (%s ignores cancellation): left behind, "
                      "it is answered after the next start", describe(task))
        self.commands.close()
        self.sessions.interrupt_all("the gateway is shutting down")
        await asyncio.sleep(0)
        await self.runner.cancel(within=max(deadline - loop.time(), STUCK_WAIT_SECONDS))
        await self.ledger.close()
        await self.outbox.flush(timeout=max(deadline - loop.time(), 0) if grace else 1.0, give_up_when_held=True)
        await self.outbox.close()
        await self.runner.idled(max(deadline - loop.time(), 0))
        for adapter in self.adapters.values():
            if isinstance(adapter, StopsWithin):  # also one whose stop failed: its client is closed all the same
                try:
                    await adapter.close()
                except Exception:
                    log.exception("closing %s failed", adapter.name)
        if self._run_begun:
            # Else the start failed or was stopped before it began its run: the record of the run before,
            # maybe cut short by a crash the next start must charge to the events it had begun, stays.
            try:
                await self.store.end_run()  # before the host closes the database it shares with the lifecycle journal
            except sqlite3.Error as exc:
                # A full disk, another process holding the write lock: the children, the journal and the store are
                # closed all the same (raised, they were left open, and the process ended with a traceback).
                log.error("the clean stop could not be recorded (%s: %s): the next start takes the messages left "
                          "unanswered as cut short by a crash, counting an attempt against each", type(exc).__name__,
                          exc)
        self._say_what_is_left()  # the children still live, before the host's close interrupts them
        try:
            await self.host.close(grace=max(deadline - loop.time(), CLOSE_FLOOR_SECONDS))
        except JournalError as exc:
            # The children's ends, refused as the clean stop was: the trace exporter and the store are closed all
            # the same (raised, they were left open, and the process ended with a traceback).
            log.error("the ends of the children the stop interrupted could not be recorded (%s): the next start"
                      " takes them as interrupted by a crash", exc)
        if self.tracing is not None:
            await self.tracing.close()  # after the children's last spans, which closing the host ends
        tell_counted()  # the ten-minute counts the stop would lose with the loop's timers, to the log and the console
        self.recent_errors.detach()
        self.store.close()

    def _say_what_is_left(self) -> None:
        """Log, in counts, what the stop leaves for the next start (`left_behind.left_for_next_start`), or that the
        store could not tell; never raises. Nothing on a second stop: the first said it, and the store is closed."""
        if self.store.db.closed:
            return
        try:
            line = left_for_next_start(self.store, self.adapters, self.host.children,
                                       children_survive=self.host.lifecycle.engine.survives_restart,
                                       resume=self.config.lifecycle.on_restart == "resume")
        except Exception as exc:  # a sick store: the stop goes on, and whatever it left, the next start finds
            log.warning("stopped: what the stop left for the next start could not be read (%s: %s)",
                        type(exc).__name__, exc)
        else:
            log.info("%s", line)

    @property
    def quiet(self) -> bool:
        """Nothing left to do by itself now: no turn running or queued, no message held in the store for
        its turn (`session_registry.QUEUED`; between a refused read-back and the next try no worker runs),
        no plugin command being answered, no background delegation waiting for its children or their
        delivery, no child of any session alive, nothing waiting in the outbox. A child that just finished
        hands its results on within a few loop iterations: ask again a little later before counting on it."""
        if self.runner.busy or self._answers.aside or not self.outbox.idle or self.ledger.watching:
            return False
        return not any(s.held or self.host.children.children(s.session_id) for s in self.sessions)

    def storage(self) -> dict[str, object]:
        """The state database: ``ok``, or ``down`` with why and since when while SQLite cannot write
        it (a full disk, a failing device), until a write succeeds again. The file's name, not its path."""
        db = self.store.db
        if db.write_error is None:
            return {"status": "ok", "reason": None, "since": None}
        return {"status": "down", "reason": f"{db.path.name} cannot be written: {db.write_error}",
                "since": db.write_error_since}

    def connections(self) -> dict[str, ConnectionState]:
        """Each platform's connection now, by name (`platforms.connection`)."""
        return {name: adapter.connection() if isinstance(adapter, Connects) else NO_CONNECTION
                for name, adapter in sorted(self.adapters.items())}

    def command_specs(self) -> list[CommandSpec]:
        return self.commands.specs()

    # -- intake ---------------------------------------------------------------------------

    async def handle(self, inbound: Inbound) -> Accepted:
        """The sink every adapter feeds. Quick: records, routes and queues; never runs a turn inline.
        Returns once the event is durably recorded: an acknowledged event survives a crash. Raises
        SQLite's error when it could not record it, and `NotYetDurable` when it recorded it but SQLite
        refused the commit: the store commits it once it can, so it may still be handled. Any other failure
        raises only before the event is recorded: the platforms answer it as final ("could not handle",
        `platforms.not_recorded`). Once recorded, the event is handled now or after the next start whatever
        fails, so a failure from then on is logged (or counted a failed attempt, `gateway.dead_letters`) and
        the event goes on: raised, its sender was told it could not be handled, then answered (twice, had
        they sent it again)."""
        key = session_key(inbound.platform, inbound.chat_id, inbound.thread_id)
        route = self._route(inbound)
        # A command or a refusal starts no turn: recorded so before it runs, so a redelivery meanwhile names none.
        # Except for a caller that follows turn ids (webhooks): it reads the answer by the id the event names.
        opens_turn = route is None or (isinstance(route, Command) and route.then_message is not None) \
            or inbound.platform in TRACKS_TURN_IDS
        accepted = self.store.inbox.accept(inbound, new_turn_id() if opens_turn else None)
        try:  # watching the gateway never changes what it does, least of all once the event is recorded
            self.events.inbound(inbound.platform, duplicate=not accepted.new)
        except Exception:
            log.exception("%s event %s: reporting its arrival failed; it is handled all the same",
                          inbound.platform, inbound.event_id)
        if not accepted.new:
            # Also one all of whose ids (`Inbound.aliases`: a Telegram album's items) were recorded with
            # earlier events, whatever they were gathered with then. Platforms redeliver routinely (retried webhooks,
            # Discord's RESUME replays), a flaky network many times a minute: each names another event, so the repeat
            # filter folds none. `switchboard_inbound_duplicates_total` counts them; the ids are for debugging.
            log.debug("dropping duplicate %s event %s", inbound.platform, inbound.event_id)
            # Recorded by an earlier handing over, maybe not durably yet (its commit refused, or due):
            # the caller acknowledges it to the platform on our word.
            await self._recorded_durably()
            # One handed to a question and not settled yet (refused) names the asking turn, as once settled.
            return Accepted(self._handed_to(inbound) or accepted.turn_id, key, duplicate=True)
        if accepted.recorded_as is not None:
            log.info("%s event %s holds ids recorded with an earlier event, and others not: handled as new,"
                     " under %s", inbound.platform, inbound.event_id, accepted.recorded_as.event_id)
            inbound = accepted.recorded_as
        if not self._accepting or self._replays.waits(key, inbound, accepted.turn_id, route):
            # Shutting down: keep the event (the platform may count it as delivered) and handle it after the next
            # start, with the other unsettled events, in the order received. Or behind the older events of its chat
            # that the start has not replayed yet: queued after them, or, the start failed, left to the next start.
            if not self._accepting:
                self.edits.taken_in_stop(inbound)
            await self._recorded_durably()
            return Accepted(accepted.turn_id, key)  # the id it is handled under
        result = await self._handle_accepted(inbound, accepted.turn_id, route)
        await self._recorded_durably()
        return result

    async def _recorded_durably(self) -> None:
        """Commit the event `handle` recorded. A commit the store refused and kept the row of, to commit once
        it can, is raised as `NotYetDurable`, whatever SQLite's code: a full disk or a lock, and as much a
        corrupt page or a failed allocation (`SqliteDatabase.dropped`). Raised as it is, a code the platforms
        do not count as the store's refusal was answered as final ("could not handle", a webhook's 422),
        a slash command's stop told "Not taken" (Slack's and Discord's read a raise as nothing recorded), and
        then the event, handed on already, was answered all the same (twice, had its sender sent it again).
        Only a commit error the store drops the batch for (a broken constraint) is raised as it is: nothing
        of it was recorded."""
        try:
            await self.store.durable()
        except sqlite3.Error as exc:
            if self.store.db.dropped(exc):
                raise
            raise NotYetDurable.of(exc) from exc

    async def _handle_accepted(self, inbound: Inbound, turn_id: str | None, route: object = _NOT_ROUTED) -> Accepted:
        """`_dispatch` an accepted event; ``route`` is its `_route` when the caller knows it already
        (an event read back from the inbox is routed here). Never raises: a failure is counted, and
        the event is tried again later or set aside (`gateway.dead_letters`)."""
        key = session_key(inbound.platform, inbound.chat_id, inbound.thread_id)
        try:
            # In the chat's order: a message sent right after /new waits until /new and its text are handled.
            async with self._intake.turn(key, self._durable_before_waiting):
                if route is _NOT_ROUTED:
                    route = self._route(inbound)
                return await self._dispatch(inbound, turn_id, route)  # type: ignore[arg-type]
        except Exception as exc:
            self._not_handled(inbound, turn_id, exc)
            # Handed to a question before the store refused its settling: answered in the asking turn, which a
            # caller that follows turn ids (webhooks) reads, not this event's own turn, which never runs.
            return Accepted(self._handed_to(inbound) or turn_id, key)

    def _handed_to(self, inbound: Inbound) -> str | None:
        """`Questions.handed`, read once the event is recorded: a failure is logged and the event named by its
        own turn, as `handle` must not raise past the record (its sender told "could not handle", then answered)."""
        try:
            return self.questions.handed(inbound)
        except Exception:
            log.exception("%s event %s: reading whether it answered a question failed; named by its own turn",
                          inbound.platform, inbound.event_id)
            return None

    async def _durable_before_waiting(self) -> None:
        """Before an event waits for the event of its chat being handled: commit it, so that the platform's
        acknowledgement need not wait for the chat. A commit the store refuses (a full disk) is no failure of
        the event: it waits all the same and is handled in its turn, as an event with none before it is
        (`handle` then raises `NotYetDurable`). Raised, it was counted a failed attempt of the event, set
        aside with an apology after ``inbox.max_attempts``, or, its counting refused as well, raised to the
        platform as not recorded, whose redelivery is then a duplicate: handled by no one until a restart."""
        try:
            await self.store.durable()
        except sqlite3.Error as exc:
            if not storage_refusal(exc):
                raise

    def _not_handled(self, inbound: Inbound, turn_id: str | None, exc: Exception) -> None:
        """Handling ``inbound`` raised ``exc``. A refusal of the store (a full disk, a lock) says nothing
        of the event: it is not counted, and is tried again until the store takes it
        (`DeadLetterPolicy.refused`). Anything else is a failed attempt (`DeadLetterPolicy.failed`), and when
        the store refuses to count that, the event is tried again as a refused one: counted once the store
        can write. Never raises: a start replays stored events through here, and must not be stopped by one."""
        if not storage_refusal(exc):
            try:
                if not self.dead_letters.failed(inbound, turn_id, exc) and turn_id is not None:
                    self.runner.not_beginning(turn_id)
                return
            except Exception as count_failed:
                if not storage_refusal(count_failed):
                    log.exception("%s event %s: handling it failed (%s: %s), and so did counting that; it is not "
                                  "handled now and is kept for the next start", inbound.platform, inbound.event_id,
                                  type(exc).__name__, exc)
                    return
                log.error("%s event %s: handling it failed (%s: %s), and the store refused to count that; it is "
                          "tried again, and counted once the store can write", inbound.platform, inbound.event_id,
                          type(exc).__name__, exc, exc_info=exc)
                exc = count_failed
        try:
            self.dead_letters.refused(inbound, turn_id, exc)
        except Exception:
            log.exception("%s event %s: handling it met the store's refusal (%s: %s), and arranging to try again "
                          "failed; it is not handled now and is kept for the next start", inbound.platform,
                          inbound.event_id, type(exc).__name__, exc)

    async def _handle_again(self, inbound: Inbound, turn_id: str | None) -> Accepted:
        """`_handle_accepted` an event handed back (`switchboard inbox retry`) or tried again after a
        failure: its turn may have run before, in a process that died with it."""
        if turn_id is not None:
            self.runner.replaying({turn_id})
            try:
                if self._turn_shown(turn_id):  # as when a start replays it: a deletion while it waits drops nothing
                    self.edits.handed_back(inbound)
            except sqlite3.Error as exc:  # handled all the same: only a deletion may drop it meanwhile
                log.warning("%s event %s: could not read whether its turn %s showed anything: %s: %s",
                            inbound.platform, inbound.event_id, turn_id, type(exc).__name__, exc)
        try:
            return await self._handle_accepted(inbound, turn_id)
        finally:
            self.runner.ran_apart(inbound)  # asked of a start's replays only: forgotten

    def _route(self, inbound: Inbound) -> Command | Literal["refused"] | None:
        """A refusal, a command, or None for a message that starts a turn."""
        if not allowed(self.config, inbound):
            return "refused"
        # A forward of someone's "/new plan the trip" is theirs to read, not the forwarder's command.
        return None if inbound.forwarded else self.commands.parse(inbound.text)

    async def _dispatch(self, inbound: Inbound, turn_id: str | None, route: Command | Literal["refused"] | None,
                        ) -> Accepted:
        """Handle an accepted event that starts ``turn_id`` (None: a command or a refusal)."""
        if route == "refused":
            # Answered without a session: else each stranger's chat or thread (every top-level Slack
            # mention is one) would add one for good to the database, and an agent to memory.
            if turn_id is not None:
                self.runner.not_beginning(turn_id)  # only a caller that follows turn ids names one here
            if isinstance(adapter := self.adapters.get(inbound.platform), HearsRefusals):
                adapter.refused(inbound)  # a thread their mention put the bot in is not its
            # Folded per platform, whoever is refused: a public bot probed by thousands of strangers wrote a
            # WARNING for each, and the repeat filter folds only lines alike.
            if self.refusals.due(inbound):
                log.warning("refused %s user %s", inbound.platform, inbound.user_id,
                            extra=alike(f"refused {inbound.platform}", inbound.user_id, "user"))
                try:
                    self._answers.answer(inbound, REFUSAL.format(user_id=inbound.user_id), turn_id)
                except Exception:
                    # Not given (a full disk): else the event, handled again, was settled as told already,
                    # and the stranger heard nothing for `QUIET_SECONDS`.
                    self.refusals.undo(inbound)
                    raise
            else:  # told a moment ago in this chat or thread
                log.info("refused %s user %s again, without an answer", inbound.platform, inbound.user_id,
                         extra=alike(f"refused {inbound.platform} again", inbound.user_id, "user"))
                self.store.inbox.settle(inbound.platform, inbound.event_id)
            return Accepted(turn_id, session_key(inbound.platform, inbound.chat_id, inbound.thread_id))
        session = self.sessions.get(inbound.platform, inbound.chat_id, inbound.thread_id)
        if isinstance(route, Command) and route.then_message is None:
            # It runs now, queued behind nothing: a death while it runs is charged to it. A plugin's
            # handler, or the `subagent_stop` hooks of the children /new and /stop withdraw (plugins'
            # code too), may be what brought the process down. Made durable with the event's intake.
            self.store.inbox.begin(inbound.platform, inbound.event_id)
            self.store.sessions.used(session.key)
            if turn_id is not None:
                self.runner.not_beginning(turn_id)  # only a caller that follows turn ids names one here
            if self.commands.is_plugin(route):
                self._answers.answer_in_line(session, inbound, route, turn_id)
            elif self._answers.waits(session, inbound) and route.name not in ANSWERED_AT_ONCE:
                # Run as it comes, answered after the chat's commands sent before it (a pasted block, in order).
                self._answers.answer_in_line(session, inbound, route, turn_id,
                                             text=await self._answers.run(session, route, inbound))
            else:
                if route.name == "stop":
                    self._answers.let_go(session)
                # Run once: an answer the store refuses is kept for the event handled again, not made anew.
                text = await self._answers.run(session, route, inbound)
                with self._answers.kept_if_refused(inbound, text, turn_id):
                    self._answers.answer(inbound, text, turn_id)
            return Accepted(turn_id, session.key)
        turn_id = turn_id or new_turn_id()  # an event recorded without one by an older build
        if isinstance(route, Command):  # /new, then the message that follows it
            if self.store.outbox.message(f"{answer_key(inbound)}:0") is None:  # else it ran before a restart
                self.store.inbox.begin(inbound.platform, inbound.event_id)  # as a command of its own
                text = await self._answers.run(session, route, inbound)
                with self._answers.kept_if_refused(inbound, text, turn_id, settles=False):
                    self._answers.send(inbound, text, turn_id)
            # Answered: its text waits for its turn, charged with nothing until that begins. Also when answered
            # already: the store refused this very write (a full disk), and the event is handled again; left begun,
            # a death while the text waited behind a slow turn was charged to it.
            self.store.inbox.reopen(inbound.platform, inbound.event_id)
            # Queued whatever the busy mode: /new has stopped the running turn (or, sent before that turn's
            # message, left it going on: it waits for it).
            self.runner.submit(session, WorkItem("message", route.then_message, turn_id, inbound))
            return Accepted(turn_id, session.key)
        running = session.running
        # A stopped turn may take a while to wind down (a tool tidying up), and what it reads meanwhile
        # is never answered: a message sent after the stop is neither its answer nor its steer.
        listening = running if running is not None and not running.suppressed else None
        # The model asked the chat: a text message is the answer (files take the usual way, read in a turn).
        # Or it was handed over already, and the store refused to settle it: handled again, it is settled only,
        # not read as a message of its own (the question it answered waits no more), its model paid twice.
        answered = self.questions.handed(inbound)
        if answered is None and listening is not None and not inbound.attachments \
                and self.questions.hand_answer(listening, inbound):
            answered = listening.turn_id
        if answered is None:  # a reply from another topic to the question waiting there
            answered = self.questions.hand_across_threads(inbound)
        if answered is not None:
            # Handed over: a restart asks again.
            self.store.inbox.settle(inbound.platform, inbound.event_id, into_turn=answered)
            self.questions.settled(inbound)
            return Accepted(answered, session.key)
        # Run again after a restart, the turn has not asked again what the chat may be answering. Not for
        # a caller that follows its turn id (webhooks): the turn it is answered in is not known yet.
        if listening is not None and not inbound.attachments and session.platform not in TRACKS_TURN_IDS \
                and self.questions.hold(session, listening, WorkItem("message", inbound.text, turn_id, inbound)):
            return Accepted(listening.turn_id, session.key)  # settled once used, else run as its own turn
        # Or the turn run again in another topic, whose question it replies to from here: not taken, it is queued here.
        if session.platform not in TRACKS_TURN_IDS and (held_by := self.questions.hold_across_threads(
                inbound, turn_id, functools.partial(self._send_home, session))) is not None:
            return Accepted(held_by, session.key)
        # Sent after a reply held for the question the turn asks again: it neither stops the turn nor reaches it first.
        busy_mode = ("queue" if self.questions.holds_answer(listening)
                     else self.display.turn(session.platform).busy_input_mode)
        # A steer carries text only; files are downloaded when a turn starts, so they make a turn of their own.
        # So does each request of a caller that follows its turn id (webhooks): a steer shares the running
        # turn's id, and a turn that ends before reading it leaves the text to a turn of another id. Nor
        # is a completion turn steered: its reply may be silenced (NO_REPLY), a reply to a message never is.
        # Nor is a message sent after one of its sender's still waiting for its turn (one with files; maybe held
        # in the store): it is answered after it; another member's waiting message is no reason for it to wait (a
        # request of its own). Nor is another group member's message: a request of its own (as with interrupt below).
        if listening is not None and busy_mode == "steer" and not inbound.attachments and not listening.quiet \
                and listening.kind != "completion" and session.platform not in TRACKS_TURN_IDS \
                and _from_its_asker(inbound, listening) \
                and not self.sessions.waits_from(session, inbound.user_id):  # last: it may read the store
            if listening.question is None:  # else the turn is idle: begun once it goes on (`gateway.questions`)
                self.store.inbox.begin(inbound.platform, inbound.event_id)  # durable before `handle` returns
            self.sessions.steer(session, inbound, turn_id)  # settled once the turn has read it
            return Accepted(listening.turn_id, session.key)
        # A completion turn is never interrupted by a message: its results would be lost. Nor is the
        # turn of a newer message (this one replayed after a restart, or handed back late): the
        # older one waits its turn instead of silencing the newer. Nor a turn that began after this
        # message was sent (both sent while the gateway was down, handed over back to back after the
        # restart): the user never saw it working. Nor a turn whose model has answered
        # and which only winds down (its hooks): its answer is sent, then this message runs. Nor, in a
        # group, the turn of another member's message: that member would never get their answer. Nor a quiet run
        # (`RunningTurn.quiet`): the chat saw its turn end.
        if running is not None and busy_mode == "interrupt" and running.kind != "completion" and not running.quiet \
                and _from_its_asker(inbound, running) and not session.agent.activity.answered \
                and not self._sent_before(inbound, running.event) \
                and not self.store.inbox.sent_before(inbound, self._began_at(running)):
            self.sessions.stop_turn(session, "interrupted by a new message", why="superseded")
        if inbound.attachments and self.questions.waits(listening):
            # Not the answer the user may have meant it for: said now, not once the question gives up. Before
            # the turn is queued, as nothing that can fail may come after that: a failure (the store refusing
            # this notice) has the event handled again, which would queue the same turn a second time, its
            # model paid twice. Handled again, the notice is not sent twice: it is keyed by the event.
            self._answers.send(inbound, FILE_WAITS, turn_id)
        self.runner.submit(session, WorkItem("message", inbound.text, turn_id, inbound))
        return Accepted(turn_id, session.key)

    def _send_home(self, session: GatewaySession, item: WorkItem) -> None:
        """Queue ``item``, written in ``session``'s thread and held for another thread's question that did not take
        it (`RunningTurn.held_home`), in that thread's session as it is now. Not ``session`` itself: it may have left
        memory since, come back as another (whose turns grew the conversation) and left again; queued in it, the
        turn ran on the conversation as it was and stored it whole, those turns lost. A load the store refuses
        leaves it to ``session``."""
        try:
            session = self.sessions.get(*session.chat)
        except Exception as exc:
            log.warning("%s chat %s: could not load its session for a held message (%s: %s); queued in the one it"
                        " was accepted in", session.platform, session.chat_id, type(exc).__name__, exc)
        self.runner.submit(session, item)

    def _began_at(self, running: RunningTurn) -> float:
        """When ``running`` began, on the wall clock as it reads now: one stepped back since (NTP setting right
        a clock that ran fast) moves it back as far, else a message sent in the turn's first minutes (received,
        or dated by the platform, before the clock's old reading) was taken for one written before the turn,
        and waited for it instead of stopping it. A suspend moves nothing (`Questions._asked_at`)."""
        return min(running.started_at, self.clock.time() - (self.clock.monotonic() - running.started_awake))

    def _sent_before(self, inbound: Inbound, other: Inbound | Heard | None) -> bool:
        """Whether ``inbound`` was sent before ``other``: as the platform dates them, else (the web chat,
        the terminal, webhooks) in the order the inbox received them (`Inbox.arrival`, not by the receipts'
        dates, which a clock stepped back turns round), so that an event handled again late (after a failure,
        or handed back) still counts as the older."""
        if other is None:
            return False
        if inbound.sent_at is not None and other.sent_at is not None:
            return inbound.sent_at < other.sent_at
        inbox = self.store.inbox
        first, then = (inbox.arrival(e.platform, e.event_id) for e in (inbound, other))
        return first is not None and then is not None and first < then

    # -- wiring -----------------------------------------------------------------------------

    def _delegate_for(self, mode: Mode, backend: str) -> Tool | None:
        """The ``delegate_task`` of sessions with this mode and delegation backend: built on first
        use (after the plugins have registered their backends), then shared."""
        key = (mode, backend)
        if key not in self._delegates:
            if mode == "background":
                self._delegates[key] = self.host.background_delegate(self.ledger.dispatched, backend=backend,
                                                                     admit=self.ledger.admit)
            else:
                self._delegates[key] = self.host.inline_delegate(backend)
        return self._delegates[key]

    def _new_agent(self, session_id: str, mode: Mode, chat: ChatKey, backend: str) -> AgentSession:
        return self.host.new_session(session_id=session_id, services=self._chat_services,
                                     delegate=self._delegate_for(mode, backend), platform=chat[0], chat_id=chat[1])

    def _quote_unspent(self, row: OutboxRow) -> None:
        """``row`` took its turn's quote and failed (a file the platform refused), and the turn has
        journaled nothing since: if it still runs, its next message quotes instead (`RunningTurn.quote`)."""
        session = self.sessions.find(row.platform, row.chat_id, row.thread_id)
        running = session.running if session is not None else None
        if running is not None and running.turn_id == row.turn_id:
            running.give_back_quote(row.reply_to)

    async def _read_turn(self, route: str, turn_id: str) -> TurnRead:
        """The webhook platform's turn read (`gateway.turn_reads`)."""
        return await read_turn(self.store, self.ledger, route, turn_id)


def _from_its_asker(inbound: Inbound, running: RunningTurn) -> bool:
    """Whether ``inbound`` may change the course of ``running`` (interrupt or steer it): anything
    said in a private chat may; in a group, channel or thread only what the member whose message the
    turn answers says, as the others' messages are requests of their own, which wait their turn."""
    return inbound.is_private or (running.event is not None and running.event.user_id == inbound.user_id)

