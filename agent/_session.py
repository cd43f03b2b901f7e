"""One agent session: a conversation, a model, tools, a budget, interrupts and steering."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent._activity import Activity
from agent._clock import SYSTEM_CLOCK, Clock
from agent._context_window import context_window, remember_window
from agent._errors import ModelError, ToolError, TurnInProgress, body_too_large, exceeds_context
from agent._frozen import fast_init
from agent._hooks import HookRegistry
from agent._ids import new_id
from agent._interrupts import _Guard, _HardInterrupted, _Interrupt
from agent._model import Model, ModelRequest, ModelResponse, ToolCall, Usage
from agent._saved_turn import load_turn, save_turn
from agent._steer_note import STEER_NOTE
from agent._token_estimate import estimate_tokens, schema_tokens
from agent._tool_calls import (
    _answer_open_calls,
    _assistant_with_calls,
    _mend_history,
    _parse_arguments,
    _unique_ids,
)
from agent._tools import Tool, ToolContext, exception_text, tool_failure_text, utf8_text
from agent._turn import _NO_USAGE, ToolTraceEntry, TurnResult, _charge, _plus, _TurnState

log = logging.getLogger("agent.session")

TOOL_LOG_SIZE = 50
CUT_OFF_CALLS_ENDING_A_TURN = 2
"""Answers in a row with a tool call cut off at the output-length limit that end a turn (`_tool_calls.CUT_OFF`)."""
MAX_CALLS_PER_ANSWER = 64
"""Tool calls of one model answer that run; the rest are answered `TOO_MANY_CALLS`. A model caught in a loop
(a small local one, most often) may repeat one call hundreds of times in an answer: each ran, a message sent
to the chat or a file written as often, and their results filled the context window in one block that
compaction cannot part (a call stays with its results)."""
TOO_MANY_CALLS = (f"[not run: the answer held more than {MAX_CALLS_PER_ANSWER} tool calls; only the first "
                  f"{MAX_CALLS_PER_ANSWER} ran. Send fewer calls at a time]")


@fast_init
@dataclass(frozen=True, slots=True)
class ActiveTurn:
    session: AgentSession
    turn_id: str
    held: bool = False
    """Made by `agent.testing.inside_turn`, no model running it: `live` for as long as anything holds it."""

    @property
    def live(self) -> bool:
        """Whether the turn is still under way. A task (or a thread given the context) started in it carries
        it after it has ended, `active_turn` returning it there: the lifecycle API takes that for no turn."""
        return self.held or self.session._active_turn is self

    @property
    def stopping(self) -> bool:
        """Whether the turn's work has been asked to stop (`/stop`, `/new`, a subagent's own stop) and it ends at its
        next boundary; not a turn only superseded by the chat's next message (`AgentSession.interrupt`'s
        ``ends_work``), whose children run on. Never a held turn's: its session may keep the interrupt of an earlier
        turn, no model running it."""
        interrupt = self.session._interrupt
        return not self.held and interrupt is not None and interrupt.ends_work


_ACTIVE_TURN: contextvars.ContextVar[ActiveTurn | None] = contextvars.ContextVar("switchboard_active_turn", default=None)


def active_turn() -> ActiveTurn | None:
    """The agent turn running in the current context (also inside tool worker threads), if any."""
    return _ACTIVE_TURN.get()


class TurnObserver:
    """Callbacks a host (the gateway) uses to watch a turn; every method is optional."""

    async def on_interim(self, text: str) -> None:
        """Assistant text that came with tool calls: never the final reply."""

    async def on_tool_start(self, name: str, args: Mapping[str, Any]) -> None: ...

    async def on_tool_end(self, name: str, ok: bool) -> None: ...


_NO_OBSERVER = TurnObserver()


class AgentSession:
    """Runs turns one at a time. Not thread-safe except `interrupt` and `steer`, which
    may be called from any task on the session's loop."""

    # Set on an instance only when first needed: an idle session (the gateway holds thousands)
    # keeps a small, key-sharing attribute dict.
    _next_tools: dict[str, Tool] | None = None
    _active_turn: ActiveTurn | None = None
    """The `ActiveTurn` of the turn under way (`ActiveTurn.live`)."""
    _tool_log: deque[ToolTraceEntry] | None = None
    _overflow_warned = False
    _too_large_warned = False
    _turn: _TurnState | None = None
    """The running turn's spend so far, for `add_cost`."""
    _unbilled: tuple[Usage, float | None, int] | None = None
    """Spend `add_cost` gave a turn that had ended: the next turn's."""
    # Past 30 attributes an instance's dict stops sharing its keys with the others' and takes 1.3 KB more
    # (CPython's SHARED_KEYS_MAX_SIZE): a thousand children wait at once, so these default here too.
    _interrupt: _Interrupt | None = None
    _guarded_task: asyncio.Task | None = None
    """The task a hard interrupt cancels (`agent._interrupts._Guard`)."""
    _hard_cancel_sent = False
    _unseen_steer: list[tuple[dict[str, Any], str | None, list[str]]] | None = None
    """Steered text put into the conversation since the model last answered, oldest first: (the message
    that carries it, the suffix it added to a tool result or None for a note of its own, the texts). A turn
    that ends with no model answer after it (`_steer_unseen_again`) makes it unread again."""
    _checked_messages: list[dict[str, Any]] | None = None
    """The `messages` list `_mend_loaded` last saw: one a host put in its place (a stored transcript) is
    checked once, at the next turn's start; this session's own writes need none, nor a list of one message."""
    before_model_call: Callable[[AgentSession], Awaitable[None]] | None = None
    """Awaited as ``before_model_call(session)`` ahead of every model call. Set on an instance only when
    given (tests do): its place in every session's attributes is `redact`'s."""

    def __init__(
        self,
        *,
        model: Model,
        tools: Mapping[str, Tool] | None = None,
        system_prompt: str = "",
        role: str = "parent",
        session_id: str | None = None,
        max_iterations: int = 90,
        workspace: Path | None = None,
        services: Mapping[str, Any] | None = None,
        enabled_toolsets: frozenset[str] | None = None,
        depth: int = 0,
        metadata: Mapping[str, Any] | None = None,
        clock: Clock = SYSTEM_CLOCK,
        before_model_call: Callable[[AgentSession], Awaitable[None]] | None = None,
        compactor: Callable[..., Awaitable[bool | None]] | None = None,
        hooks: HookRegistry | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.model = model
        # Copies of what was given; `dict(x or {})` would build an empty dict only to copy it.
        self.tools: dict[str, Tool] = dict(tools) if tools else {}
        """Fixed during a turn: their schemas are built on its first model call (see `replace_tool`)."""
        self._schemas: list[dict[str, Any]] | None = None
        self.role = role
        self.session_id = session_id or new_id("s-")
        self.max_iterations = max_iterations
        self.workspace = workspace or Path.cwd()
        self.services = dict(services) if services else {}
        self.enabled_toolsets = enabled_toolsets
        """The toolsets this session may use (None = all): children may only narrow it."""
        self.depth = depth
        self.metadata = dict(metadata) if metadata else {}
        self.clock = clock
        if before_model_call is not None:
            self.before_model_call = before_model_call
        self.compactor = compactor
        """Awaited as ``compactor(session)`` before `before_model_call` ahead of every model call; may
        rewrite `messages` (see `agent.Compactor`). When the server refuses a call as over the model's
        context window (`ModelError.context_exceeded`), awaited as ``compactor(session, error)``: a true
        result (it compacted) has the call asked once more. A hard interrupt cancels it."""
        self.hooks = hooks
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
        self.history_version = 0
        """Bumped whenever messages already in `messages` are replaced (compaction, `_mend_loaded`).
        Messages are otherwise only appended, never changed, so a saver can store just the new ones."""
        self.activity = Activity(last_activity=clock.monotonic())
        self.turns_run = 0
        self.total_usage = _NO_USAGE
        self.total_cost_usd = 0.0
        self.total_api_calls = 0
        self._steer: list[str] = []
        """Steered text not read yet, oldest first (a list: an empty deque takes 600 bytes, and a
        thousand children wait at once)."""
        self.interrupt_listeners: list[Callable[[str, bool], None]] = []
        """Called as ``listener(reason, hard)`` by every `interrupt` of a running turn (a
        tool waiting on children passes the interrupt on to them)."""
        self._running = False
        self.redact = redact
        """Masks secrets in what the model reads of a tool's failure. A failure's text is its exception's
        author's (a plugin's HTTP client quoting the URL it called, bot token and all), and a model reading
        it may quote it to the chat. A successful result is the data the tool was asked for: passed as it is."""

    # -- control, from other tasks -------------------------------------------------

    @property
    def running(self) -> bool:
        return self._running

    def interrupt(self, reason: str = "interrupted", *, hard: bool = False, ends_work: bool = True) -> bool:
        """Stop the running turn at its next safe boundary; ``hard`` also cancels the
        in-flight model request or tool. ``ends_work``: its work stops too (`/stop`, `/new`), so nothing it would
        launch now may start (`ActiveTurn.stopping`); False for a turn only superseded by the chat's next message,
        whose children run on. Returns False when no turn is running."""
        if not self._running:
            return False
        current = self._interrupt
        if current is None or (hard and not current.hard) or (ends_work and not current.ends_work):
            self._interrupt = _Interrupt(reason, hard or (current is not None and current.hard),
                                         ends_work or (current is not None and current.ends_work))
        for listener in list(self.interrupt_listeners):
            listener(reason, hard)
        if hard and self._guarded_task is not None and not self._hard_cancel_sent:
            self._hard_cancel_sent = True
            self._guarded_task.cancel()
        return True

    @property
    def tool_log(self) -> tuple[ToolTraceEntry, ...]:
        """The session's latest tool calls (at most `TOOL_LOG_SIZE`), oldest first, metadata only
        (as in a turn's trace); readable while a turn runs."""
        return tuple(self._tool_log or ())

    def replace_tool(self, tool: Tool) -> bool:
        """Swap in ``tool`` for the session's tool of the same name from the next turn on: a
        running turn keeps the tools (and schemas) it started with. False, and nothing
        changes, when the session has no tool of that name."""
        if tool.name not in self.tools:
            return False
        if self._next_tools is None:
            self._next_tools = {}
        self._next_tools[tool.name] = tool
        if not self._running:
            self._apply_next_tools()
        return True

    def _apply_next_tools(self) -> None:
        if self._next_tools:
            self.tools.update(self._next_tools)
            self._next_tools = None
            self._schemas = None

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The schemas of the session's tools, which every model call sends beside the messages: built once per
        tool set (by a turn's first model call, or its compaction, which weighs them), anew after `replace_tool`."""
        if self._schemas is None:
            self._schemas = [t.schema() for t in self.tools.values()] if self.tools else []
        return self._schemas

    def steer(self, text: str) -> None:
        """Queue text for the model at the next iteration boundary (FIFO)."""
        self._steer.append(text)

    @property
    def unread_steers(self) -> int:
        """How many steered texts no model call has read yet (the last ones steered)."""
        return len(self._steer)

    @property
    def unseen_steers(self) -> int:
        """How many steered texts are in the conversation, after a tool's result, that no model call has read yet
        (the call whose result took them is not answered)."""
        return sum(len(texts) for _, _, texts in self._unseen_steer or ())

    def take_steer(self) -> list[str]:
        """Remove and return steered text no model call has read yet (a turn that ended first
        leaves it here); the host decides what becomes of it."""
        unread, self._steer = self._steer, []
        return unread

    def add_cost(self, usage: Usage, cost_usd: float | None, api_calls: int = 0, *, turn_id: str | None = None) -> None:
        """Add spend made for this session outside its own model calls (a child's, rolled up; the
        compactor's summary) to its totals and to one turn's figures, exactly once: the running
        turn's; with ``turn_id`` (a child's launching turn), that turn's while it runs, else the
        next turn's (a background child's lands in the turn that runs next, most often the one
        that delivers its result). Spend with no ``turn_id`` while no turn runs is the session's only."""
        if usage.prompt_tokens or usage.completion_tokens:
            self.total_usage += usage
        self.total_api_calls += api_calls
        if cost_usd:
            self.total_cost_usd += cost_usd
        turn = self._turn
        if turn is not None and (turn_id is None or turn_id == turn.turn_id):
            _charge(turn, usage, cost_usd, api_calls)
            # Not the turn's own model calls (a child's, the compactor's summary): `ModelRequest.iteration`
            # counts those only, or each compaction skipped a number and a script (`ScriptedModel`) a step.
            turn.child_calls += api_calls
        elif turn_id is not None:
            held = self._unbilled or (_NO_USAGE, None, 0)
            tokens = held[0] + usage if usage.prompt_tokens or usage.completion_tokens else held[0]
            self._unbilled = (tokens, _plus(held[1], cost_usd), held[2] + api_calls)

    def summary_failed(self) -> None:
        """The compactor could not get a summary from the model (`agent.Compactor`): the running
        turn's result says so (`TurnResult.summary_failed`), for the host to tell the user."""
        if self._turn is not None:
            self._turn.summary_failed = True

    # -- the loop --------------------------------------------------------------------

    async def run_turn(
        self, user_message: str | list[dict[str, Any]] | None, *, observer: TurnObserver = _NO_OBSERVER,
        turn_id: str | None = None, _resumed: tuple[_TurnState, _Interrupt | None] | None = None,
    ) -> TurnResult:
        """Run the tool-calling loop until the model answers without tool calls, the
        budget runs out, or an interrupt lands. Never raises for model or tool failures:
        they end the turn with ``exit_reason="error"`` or become tool results.

        ``turn_id`` names the turn (a host passes its own, so one id runs from the chat
        to the children); a fresh one is made when it is None. ``_resumed`` is `resume_turn`'s:
        the turn to go on with (``user_message`` None), and a stop that came meanwhile. One
        coroutine for both, not one awaiting another: a thousand children each wait in a turn,
        and every frame they hold is memory."""
        if self._running:
            raise TurnInProgress(f"session {self.session_id} is already running a turn")
        if _resumed is None:
            turn = _TurnState(turn_id or new_id("turn-"), self.clock.monotonic())
            if self._unbilled is not None:
                _charge(turn, *self._unbilled)
                turn.child_calls = turn.api_calls
                self._unbilled = None
            if self._interrupt is not None:  # an instance attribute only once a turn was interrupted
                self._interrupt = None
        else:
            turn, self._interrupt = _resumed
        if self.messages is not self._checked_messages and len(self.messages) > 1:  # a child's first: its prompt
            self._mend_loaded()
        self._running = True
        if self._next_tools:
            self._apply_next_tools()
        clock, hooks = self.clock, self.hooks
        self._turn = turn
        active = self._active_turn = ActiveTurn._build(self, turn.turn_id)
        token = _ACTIVE_TURN.set(active)
        activity = self.activity
        exit_reason = None
        asked = too_long = None
        try:
            if user_message is not None:
                asked = {"role": "user", "content": user_message}
                self.messages.append(asked)
                # Hooks are looked for before a call is made: most sessions have none, and a thousand
                # children each run a turn.
                if hooks is not None and "turn_start" in hooks.registered:
                    await self._run_hook("turn_start", turn_id=turn.turn_id, role=self.role)
            exit_reason, error, error_kind = await self._loop(turn, observer)
            # The turn's own picture is at fault only when no answer of the turn read it: one that did was
            # readable, and no longer is (a child's image URL that expired while it worked), like an earlier one;
            # nor when the server names an earlier message's picture ("Timeout while downloading <its URL>").
            if error_kind == "bad_image":
                own = asked is not None and _holds_picture(asked["content"]) and not turn.iterations
                named = _pictures_named(error, self.messages, asked) if own else frozenset()
                if named or not own:
                    exit_reason, error, error_kind = await self._ask_without_pictures(turn, observer, error, named,
                                                                                      asked)
            if error_kind in ("content_filter", "bad_image") and asked is not None:  # bad_image: its own picture's
                self._forget_from(asked)
            # No answer of the turn read its message: refused as too long, it may be so on its own.
            if exit_reason == "error" and asked is not None and not turn.iterations and exceeds_context(error or ""):
                too_long = self._too_long_alone(asked)
            if hooks is not None and "turn_end" in hooks.registered:
                await self._run_hook("turn_end", turn_id=turn.turn_id, role=self.role, exit_reason=exit_reason)
        finally:
            if self._unseen_steer is not None:
                self._steer_unseen_again(exit_reason)
            if exit_reason != "completed":  # a completed turn ended on an answer without calls
                _answer_open_calls(self.messages)
            try:
                _ACTIVE_TURN.reset(token)
            except ValueError:
                pass  # torn down outside the turn's own context (a workflow evicted from a worker's cache)
            self._running = False
            self._turn = None
            self._active_turn = None
            activity.current_tool = None
            activity.tool_started_at = None
            activity.last_activity = ended = clock.monotonic()
            activity.description = "idle"
            activity.answered = False
            self.turns_run += 1
        interrupt = self._interrupt
        return TurnResult._build(  # positional, in field order: this runs for every child
            turn.turn_id, turn.final_text if exit_reason == "completed" else turn.last_text, exit_reason,
            turn.api_calls, turn.usage, turn.cost, ended - turn.started, tuple(turn.trace), error,
            interrupt.reason if exit_reason == "interrupted" and interrupt else None,
            turn.model_name or getattr(self.model, "name", None), turn.truncated, error_kind, turn.summary_failed,
            turn.filtered, turn.retry_after, too_long,
        )

    def _too_long_alone(self, asked: dict[str, Any]) -> tuple[int, int] | None:
        """(the estimated tokens of the user message ``asked``, the tokens the model's window leaves it beside the
        system prompt and the tools' schemas) when it takes more than that (`TurnResult.message_too_long`): a pasted
        log the server refused, which no compaction of the conversation before it, nor a new one, makes fit."""
        system = self.messages[:1] if self.messages and self.messages[0].get("role") == "system" else []
        room = context_window(self.model) - estimate_tokens(system) - schema_tokens(self.tool_schemas())
        tokens = estimate_tokens([asked])
        return (tokens, max(0, room)) if tokens > room else None

    def _forget_from(self, asked: dict[str, Any]) -> None:
        """Take the turn that began with the user message ``asked`` out of the conversation: the provider's
        content filter blocked it, or it holds a picture the server cannot read, and every later request that
        still carried it would be refused too, so the user's message put another way (as they are asked to)
        would be. Kept when compaction folded it away meanwhile (it is no longer what is sent)."""
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index] is asked:
                del self.messages[index:]
                self.history_version += 1  # a saver stores it all again, without them
                return

    async def _ask_without_pictures(self, turn: _TurnState, observer: TurnObserver, error: str | None,
                                    named: frozenset[str] = frozenset(), asked: dict[str, Any] | None = None,
                                    ) -> tuple[str, str | None, str | None]:
        """The turn's end after the server refused a picture it read before (a URL it can no longer fetch, a
        format the model now configured does not read): an earlier message's, or the turn's own read for an
        answer of this turn. Each picture of the conversation is left out, a note (`PICTURE_LEFT_OUT`) in its
        place, and the model asked once more.
        The server names no picture; kept, the one at fault would fail this turn and every later one, and
        leaving the turn's message out instead (background results, say) would cure nothing.
        Where it names some (``named``, the URLs of earlier messages' pictures its error quotes), only those are
        left out (`NAMED_PICTURE_LEFT_OUT`), never the turn's own (``asked``'s), and the model asked again while
        each refusal names another earlier one (expired together, the server names one a request): fewer each
        time, so at most once per earlier picture. A refusal naming none then is the turn's own picture's
        (``bad_image``)."""
        while True:
            exit_reason, error, error_kind = await self._ask_leaving_out(turn, observer, error, named, asked)
            if not named or error_kind != "bad_image" or not (named := _pictures_named(error, self.messages, asked)):
                return exit_reason, error, error_kind

    async def _ask_leaving_out(self, turn: _TurnState, observer: TurnObserver, error: str | None,
                               named: frozenset[str], asked: dict[str, Any] | None,
                               ) -> tuple[str, str | None, str | None]:
        left_out, note = 0, NAMED_PICTURE_LEFT_OUT if named else PICTURE_LEFT_OUT
        for index, message in enumerate(self.messages):
            content = message.get("content")
            if named and message is asked:
                continue
            pictures = content if _holds_picture(content) else ()
            out = [_is_picture(part) and (not named or _url_of(part) in named) for part in pictures]
            if any(out):
                told = [{"type": "text", "text": note} if gone else part
                        for part, gone in zip(pictures, out, strict=True)]
                left_out += sum(out)
                if all(isinstance(part, Mapping) and part.get("type") == "text" for part in told):
                    told = "\n\n".join(text for part in told if (text := str(part.get("text") or "")))
                self.messages[index] = {**message, "content": told}
        if not left_out:  # a model that blames a picture the request did not hold: a refusal that recurs
            return "error", error, "bad_request"
        self.history_version += 1  # a saver stores it all again, without them
        log.warning("session %s: the model server could not read a picture it was sent before; the %d "
                    "picture(s) %s are left out and the model asked again", self.session_id, left_out,
                    "of earlier messages its error names" if named else "of the conversation")
        exit_reason, error, error_kind = await self._loop(turn, observer)
        return exit_reason, error, "bad_request" if error_kind == "bad_image" and not named else error_kind

    def _mend_loaded(self) -> None:
        """Mend a conversation this session did not write (`_mend_history`) before any of it is sent:
        a transcript an older version stored could hold a tool call the server refuses, each time."""
        mended, answered = _mend_history(self.messages)
        self._checked_messages = self.messages
        if mended or answered:
            self.history_version += 1  # a saver stores it all again, mended
            log.warning("session %s: its stored conversation held %d tool call(s) whose arguments were not a JSON "
                        "object (now sent as one, {} if they held none) or whose tool name model APIs refuse (now "
                        "sent with _ for each character refused), and %d never answered (now answered as not run), "
                        "which the model server would refuse", self.session_id, mended, answered)

    def saved_turn(self) -> dict[str, Any]:
        """The running turn, with the conversation and totals it runs on, as JSON-ready data for
        `resume_turn` to run on in another session: a workflow that continues as new takes it inside
        `Model.complete`, where the turn is about to call its model and nothing else is under way.
        The tool log (`tool_log`) is not in it: the other session's starts empty."""
        return save_turn(self)

    async def resume_turn(self, saved: Mapping[str, Any], *, observer: TurnObserver = _NO_OBSERVER,
                          interrupted: str | None = None) -> TurnResult:
        """Run on the turn `saved_turn` took (in a session built as that one was: the same model,
        tools and settings), from the model call it was about to make, as if it had never stopped:
        its result counts the calls, usage, cost and tool trace from the turn's start. Steered text
        this session holds already is read after what the saved turn had not read yet.
        ``interrupted``: a stop that came meanwhile, which ends it at once, with its partial output."""
        if self._running:
            raise TurnInProgress(f"session {self.session_id} is already running a turn")
        turn = load_turn(self, saved)
        return await self.run_turn(
            None, observer=observer, _resumed=(turn, None if interrupted is None else _Interrupt(interrupted, True)))

    async def _run_hook(self, name: str, **event: Any) -> None:
        if self.hooks is not None and self.hooks.has(name):
            await self.hooks.run(name, session_id=self.session_id, **event)

    async def _loop(self, turn: _TurnState, observer: TurnObserver) -> tuple[str, str | None, str | None]:
        """(exit reason, error text, `ModelError` kind) of the turn."""
        while True:
            if self._interrupt is not None:
                return "interrupted", None, None
            if turn.iterations >= self.max_iterations:
                return "max_iterations", None, None
            if self._steer:
                self._deliver_steer_as_note()
            try:
                response = await self._call_model(turn)
            except _HardInterrupted:
                return "interrupted", None, None
            except ModelError as exc:
                try:
                    again = not turn.asked_again and await self._compact_for_overflow(turn, exc)
                except _HardInterrupted:
                    return "interrupted", None, None
                if not again:
                    log.warning("model call failed (%s): %s", exc.kind, exc)
                    turn.retry_after = exc.retry_after
                    return "error", str(exc), exc.kind
                turn.asked_again = True
                continue  # asked once more, after the checks every call gets (interrupts, steering)
            turn.asked_again = False
            if self._unseen_steer is not None:  # this answer read it
                self._unseen_steer = None
            text = (response.text or "").strip()
            if text:
                turn.last_text = text
            if not response.tool_calls:
                turn.final_text, turn.truncated, turn.filtered = text, response.truncated, response.filtered
                self.messages.append({"role": "assistant", "content": response.text or ""})
                return "completed", None, None
            if await self._tool_step(turn, response, text, observer):
                return "completed", None, None

    async def _tool_step(self, turn: _TurnState, response: ModelResponse, text: str, observer: TurnObserver) -> bool:
        """Run the tool calls of ``response``; True when the turn ends instead (too many answers in a row
        whose calls were cut off). Apart from `_loop`, whose frame every turn waiting for its model holds
        (a thousand children at once): it needs none of these locals then."""
        # Parsed once, here: the conversation keeps what they parse to (`_kept_arguments`).
        calls = _unique_ids(response.tool_calls)  # each result must name its own call
        parsed = [_parse_arguments(c.arguments, cut_off=response.truncated) for c in calls]
        self.messages.append(_assistant_with_calls(response, calls, parsed))
        if text:
            await observer.on_interim(text)
        turn.iterations += 1
        cut_off = response.truncated and any(problem for _, problem in parsed)
        cut_offs = turn.cut_offs = turn.cut_offs + 1 if cut_off else 0
        if cut_offs >= CUT_OFF_CALLS_ENDING_A_TURN:
            # Told once already to send less; another full paid answer would most likely be cut
            # off the same way: the turn ends as one whose answer was cut off.
            log.warning("session %s: the model's tool calls were cut off at its output-length limit %d times "
                        "in a row; the turn ends", self.session_id, cut_offs)
            _answer_open_calls(self.messages)
            turn.final_text, turn.truncated = turn.last_text, True
            return True
        for index, (call, (args, problem)) in enumerate(zip(calls, parsed, strict=True)):
            if self._interrupt is not None:
                self._append_tool_result(call, "[not run: the turn was interrupted]")
                continue
            if index >= MAX_CALLS_PER_ANSWER:
                if index == MAX_CALLS_PER_ANSWER:
                    log.warning("session %s: the model sent %d tool calls in one answer; only the first %d ran",
                                self.session_id, len(calls), MAX_CALLS_PER_ANSWER)
                self._append_tool_result(call, TOO_MANY_CALLS)
                continue
            output = await self._call_tool(turn, call, args, problem, observer)
            self._append_tool_result_steered(call, output)
        return False

    async def _call_model(self, turn: _TurnState) -> ModelResponse:
        if self.compactor is not None:
            await self._compact()
        if self.before_model_call is not None:
            await self.before_model_call(self)
        if self._interrupt is not None:
            # It landed while the above ran (the loop looked before): unguarded, a hard one cancelled
            # nothing, and the whole model call would be made and paid for, then thrown away.
            raise _HardInterrupted
        request = ModelRequest._build(  # positional, in field order
            self.messages, self.tool_schemas(), self.role, self.turns_run, turn.api_calls - turn.child_calls,
            self.metadata,
        )
        activity, clock, hooks = self.activity, self.clock, self.hooks
        activity.api_calls += 1
        activity.last_activity = started = clock.monotonic()
        activity.description = "waiting for the model"
        try:
            with _Guard(self):
                response = await self.model.complete(request)
        except ModelError as exc:
            if hooks is not None and "model_call" in hooks.registered:
                await self._model_hook(turn, started, None, error=exc.kind)
            raise
        except _HardInterrupted:
            if hooks is not None and "model_call" in hooks.registered:
                await self._model_hook(turn, started, None, error="interrupted")
            raise
        activity.answered_api_calls += 1
        activity.answered = not response.tool_calls
        if hooks is not None and "model_call" in hooks.registered:
            await self._model_hook(turn, started, response)
        turn.api_calls += 1
        self.total_api_calls += 1
        usage = response.usage
        if usage.prompt_tokens or usage.completion_tokens:
            turn.usage += usage
            self.total_usage += usage
        if response.cost_usd is not None:
            turn.cost = (turn.cost or 0.0) + response.cost_usd
            self.total_cost_usd += response.cost_usd
        turn.model_name = response.model or turn.model_name
        activity.last_activity = clock.monotonic()
        activity.description = "model answered"
        return response

    async def _compact(self, overflow: ModelError | None = None) -> bool:
        """Run the compactor (a hard interrupt cancels it: `_HardInterrupted`); True when it compacted."""
        with _Guard(self):  # a summary's model call is this turn's spend too (`add_cost`)
            compacted = await (self.compactor(self) if overflow is None else self.compactor(self, overflow))
        return bool(compacted)

    async def _compact_for_overflow(self, turn: _TurnState, exc: ModelError) -> bool:
        """Whether to ask the model again after ``exc``: the server refused the request as over its
        context window, which the compaction estimate (from ``model.context_window``) did not
        foresee, or as larger than it (or a proxy in front of it) accepts, and compacting now
        shortened the conversation."""
        if not exc.context_exceeded:
            return False
        remember_window(self.model, str(exc))  # later calls, in every session, compact to fit it
        if body_too_large(str(exc)):  # no setting of ours is wrong: the model's window may be ample
            if not self._too_large_warned:
                self._too_large_warned = True
                log.warning(
                    "session %s: the model server, or a proxy in front of it, refused a request as too large "
                    "(HTTP 413); a proxy's limit on request bodies is the likely cause (nginx's client_max_body_size "
                    "is 1 MB by default, less than one photo sent inline): raise it%s", self.session_id,
                    "; meanwhile the conversation is compacted (older images dropped) and asked once more"
                    if self.compactor is not None else " (this session has no compactor: it cannot go on)")
        elif not self._overflow_warned:
            self._overflow_warned = True
            log.warning(
                "session %s: the model server refused a request as longer than the model's context window, "
                "which model.context_window puts at %s tokens; set model.context_window to the server's real "
                "window so that conversations are compacted before they reach it%s", self.session_id,
                getattr(self.model, "context_window", "?"),
                "" if self.compactor is not None else " (this session has no compactor: it cannot go on)",
            )
        return self.compactor is not None and await self._compact(exc)

    async def _model_hook(self, turn: _TurnState, started: float, response: ModelResponse | None, *,
                          error: str | None = None) -> None:
        """``model_call``: after every model call, with what it used (never the messages); call
        it only when the session has such hooks."""
        usage = response.usage if response is not None else Usage()
        await self.hooks.run(
            "model_call", session_id=self.session_id, turn_id=turn.turn_id, role=self.role,
            model=(response.model if response is not None else None) or getattr(self.model, "name", None),
            prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
            cost_usd=response.cost_usd if response is not None else None,
            duration_seconds=self.clock.monotonic() - started, error=error,
        )

    async def _call_tool(self, turn: _TurnState, call: ToolCall, args: dict[str, Any], problem: str | None,
                         observer: TurnObserver) -> str:
        """Run ``call`` with its parsed arguments (``problem``: why they could not be, from `_parse_arguments`)."""
        started = self.clock.monotonic()
        tool = self.tools.get(call.name)
        if tool is None:
            problem = f"unknown tool {call.name!r}; available tools: {', '.join(sorted(self.tools)) or 'none'}"
        self.activity.current_tool = call.name
        self.activity.tool_started_at = started
        self.activity.touch(started, f"running {call.name}")
        ok = False
        try:
            if problem is not None:
                output = utf8_text(f"Error: {problem}")  # the name is the model's, decoded from JSON escapes
            else:
                await observer.on_tool_start(call.name, args)
                await self._run_hook("tool_start", turn_id=turn.turn_id, role=self.role, tool_name=call.name,
                                     call_id=call.id, arguments=args)
                ctx = ToolContext(self, call.id, self.workspace, self.services, turn.turn_id)
                try:
                    if self._interrupt is not None:
                        # It landed while the hooks above ran: no tool heard it (a hard one cancelled nothing),
                        # and one that waits (delegate_task for its children) would wait on regardless.
                        output = "[not run: the turn was interrupted]"
                    else:
                        with _Guard(self):
                            output = await tool.invoke(args, ctx)
                        ok = True
                except ToolError as exc:
                    output = self._failure(call.name, tool_failure_text(call.name, exc))
                except _HardInterrupted:  # recorded like any failed call; the loop then stops at the interrupt
                    output = "[cancelled: the turn was interrupted]"
                except asyncio.CancelledError as exc:
                    if asyncio.current_task().cancelling():  # the turn itself is cancelled, from outside
                        raise
                    # The tool's own: a task or future it awaited was cancelled by someone else (a
                    # concurrent future's `result()` in a thread). Raised on, it ended the turn with no
                    # answer for the chat, and the call that ran read as not run.
                    log.warning("tool %s raised CancelledError, though the turn was not cancelled", call.name,
                                exc_info=True)
                    output = self._failure(call.name, f"{call.name} failed: {exception_text(exc)}")
                except Exception as exc:  # a tool bug must not end the turn
                    log.warning("tool %s raised %s", call.name, type(exc).__name__, exc_info=True)
                    output = self._failure(call.name, tool_failure_text(call.name, exc))
                output = utf8_text(output)
                await self._tool_hook(turn, call, started, ok, output)
                await observer.on_tool_end(call.name, ok)
        finally:
            now = self.clock.monotonic()
            self.activity.current_tool = None
            self.activity.tool_started_at = None
            self.activity.touch(now, f"finished {call.name}")
        entry = ToolTraceEntry(
            call.name,
            tuple(args) if isinstance(args, dict) else (),
            len(call.arguments.encode()),
            len(output.encode()),
            ok,
            now - started,
        )
        turn.trace.append(entry)
        if self._tool_log is None:
            self._tool_log = deque(maxlen=TOOL_LOG_SIZE)
        self._tool_log.append(entry)
        return output

    def _failure(self, name: str, text: str) -> str:
        """The tool result of a failed call of ``name`` whose failure reads ``text``, masked (`redact`). A redactor
        that raises (a host's own) hides the text rather than pass it on unmasked, or end the turn, as it did."""
        if self.redact is None:
            return f"Error: {text}"
        try:
            return f"Error: {self.redact(text)}"
        except Exception as exc:
            # Its traceback is not logged: the redactor's error may quote the text it was to mask.
            log.warning("masking the failure of tool %s raised %s; the model reads that it is not shown", name,
                        type(exc).__name__)
            return f"Error: {name} failed; what went wrong is not shown (it could not be masked)"

    async def _tool_hook(self, turn: _TurnState, call: ToolCall, started: float, ok: bool, output: str) -> None:
        await self._run_hook("tool_end", turn_id=turn.turn_id, role=self.role, tool_name=call.name, call_id=call.id,
                             ok=ok, output=output, duration_seconds=self.clock.monotonic() - started)

    def _append_tool_result(self, call: ToolCall, content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})

    def _append_tool_result_steered(self, call: ToolCall, output: str) -> None:
        """``output`` as ``call``'s result, with the text steered meanwhile after it (`_steer_unseen_again`)."""
        if not self._steer:
            self._append_tool_result(call, output)
            return
        texts, self._steer = self._steer, []
        suffix = f"\n\n{STEER_NOTE}\n" + "\n".join(texts)
        self._append_tool_result(call, output + suffix)
        self._unseen(self.messages[-1], suffix, texts)

    def _deliver_steer_as_note(self) -> None:
        texts, self._steer = self._steer, []
        note = {"role": "user", "content": f"{STEER_NOTE}\n" + "\n".join(texts)}
        self.messages.append(note)
        self._unseen(note, None, texts)

    def _unseen(self, message: dict[str, Any], suffix: str | None, texts: list[str]) -> None:
        if self._unseen_steer is None:
            self._unseen_steer = []
        self._unseen_steer.append((message, suffix, texts))

    def _steer_unseen_again(self, exit_reason: str | None) -> None:
        """Steered text the model never answered after, in a turn that ran out of iterations or whose next
        model call failed: taken out of the conversation and unread again, ahead of any steered since, so
        the host runs it as a turn of its own (`take_steer`). Counted as read, it would sit in the transcript
        unanswered while the host settled its message with the turn. A stopped turn's (or one ended by an
        exception) stays read: a stop is the user's, and what ends a turn by exception runs it again."""
        unseen, self._unseen_steer = self._unseen_steer, None
        if exit_reason not in ("max_iterations", "error") or not unseen:
            return
        texts: list[str] = []
        for message, suffix, steered in unseen:
            texts += steered
            if suffix is None:
                for index in range(len(self.messages) - 1, -1, -1):
                    if self.messages[index] is message:
                        del self.messages[index]
                        break
            else:
                self._unsteer_result(message, suffix)
        self._steer = [*texts, *self._steer]

    def _unsteer_result(self, message: dict[str, Any], suffix: str) -> None:
        """Take ``suffix`` off the tool result ``message``, or off the copy compaction put in its place: a
        result it shortened (longer than a quarter of the window) is a new message that keeps its end, and
        the steered text stayed in it while it was also unread again, so the model read it twice."""
        if any(m is message for m in self.messages):
            if message["content"].endswith(suffix):
                message["content"] = message["content"][: -len(suffix)]
            return
        for index in range(len(self.messages) - 1, -1, -1):
            kept = self.messages[index]
            if (kept.get("role") == "tool" and kept.get("tool_call_id") == message.get("tool_call_id")
                    and isinstance(kept.get("content"), str) and kept["content"].endswith(suffix)):
                self.messages[index] = {**kept, "content": kept["content"][: -len(suffix)]}
                self.history_version += 1
                return


def _holds_picture(content: Any) -> bool:
    """Whether a user message's ``content`` holds a picture (an ``image_url`` part)."""
    return isinstance(content, list) and any(_is_picture(part) for part in content)


def _is_picture(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "image_url"


def _url_of(picture: Mapping[str, Any]) -> str | None:
    image = picture.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    return url if isinstance(url, str) else None


def _pictures_named(error: str | None, messages: list[dict[str, Any]],
                    asked: dict[str, Any] | None) -> frozenset[str]:
    """The http(s) URLs of pictures of ``messages`` other than ``asked`` that a server's ``error`` quotes: OpenAI
    names a picture it could not fetch ("Timeout while downloading <URL>"), an earlier message's that expired.
    Not one quoted only as the start of a longer picture URL (``https://x/a.png`` in ``https://x/a.png?sig=…``),
    ``asked``'s too: each is looked for, longest first, in what the longer ones left of the error."""
    earlier: dict[str, bool] = {}  # each URL: whether a message other than ``asked`` holds it
    for message in messages:
        if _holds_picture(content := message.get("content")):
            for part in content:
                if _is_picture(part) and (url := _url_of(part)) and url[:4].lower() == "http":
                    earlier[url] = earlier.get(url, False) or message is not asked
    named, rest = set(), error or ""
    for url in sorted(earlier, key=len, reverse=True):
        if url in rest:
            rest = rest.replace(url, "\0")
            if earlier[url]:
                named.add(url)
    return frozenset(named)


PICTURE_LEFT_OUT = ("[a picture, left out: the model server could not read one of the pictures of this conversation, "
                    "so none of them is sent any more]")
"""What the model reads in place of each picture left out after the server refused one of an earlier message."""
NAMED_PICTURE_LEFT_OUT = "[a picture, left out: the model server could no longer read it]"
"""What the model reads in place of an earlier message's picture the server's error named (`_pictures_named`)."""
