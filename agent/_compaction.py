"""Context compaction: summarise older turns before a conversation outgrows the model.

A `Compactor` runs before every model call of a session (``AgentSession(compactor=...)``).
Once the estimated prompt (its messages and the tools' schemas it carries) reaches the policy's trigger,
everything between the system message and the last few messages becomes one user message holding a summary
(the user's newest message stays as it was). The session also runs it when the server refuses a
request as over its context window, or as larger than it or a proxy accepts (HTTP 413), whatever
the estimate says; the summary keeps no images.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent._context_window import context_window
from agent._errors import ModelError
from agent._model import Model, ModelRequest, ModelResponse, Usage
from agent._session import STEER_NOTE, AgentSession, active_turn
from agent._token_estimate import (
    MESSAGE_OVERHEAD,
    chars_per_token,
    estimate_tokens,
    measure,
    schema_tokens,
    tally_tokens,
    weight,
    within_tokens,
)
from agent.settings import CompressionSettings

log = logging.getLogger("agent.compaction")

SUMMARY_HEADER = "[Summary of the earlier conversation]"
CHILD_THRESHOLD_FLOOR = 16_000
"""`for_child` ignores lower values: a child compacting that early would spend its
budget summarising instead of working (reference behaviour B.11)."""

SUMMARY_PROMPT = (
    "You compress a conversation between a user and an AI assistant that uses tools. "
    "Write a summary the assistant can continue from: the user's requests and constraints, "
    "decisions made, facts learned (file paths, names, numbers, errors), work done and work "
    "still open. Be concise and factual; plain text, no preamble. A part marked EARLIER SUMMARY is all that is "
    "left of the oldest part of the conversation: carry its facts over."
)
_RENDER_CHARS = 2_000  # per message sent to the summariser, so its own prompt stays bounded
_PUT_OFF_KINDS = frozenset({"rate_limited", "server_error", "connection", "auth", "blocked", "not_found", "quota"})
"""`ModelError` kinds of a summariser's failure that say nothing of what it was asked: the provider is down,
busy, or refuses this gateway, and the turn's own call, which comes next, most likely fails the same way.
An extractive summary then would throw the older messages' detail away for good over a passing outage."""
_warned_child_values: set[int] = set()


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    threshold_ratio: float = 0.5
    """Compact at this fraction of the model's context window."""
    threshold_tokens: int = 0
    """Absolute trigger in estimated tokens; 0 = off. The lower of the two triggers wins."""
    keep_recent_messages: int = 6
    """Messages kept verbatim at the end (more when needed to keep a tool call with its results)."""
    summary_max_tokens: int = 2_000
    """A longer summary (by `estimate_tokens`: 8,000 characters of English, about 2,000 of Chinese)
    is cut, so a verbose summariser cannot refill the window."""
    fallback_line_chars: int = 160
    """Length of each line of the extractive summary used when the summariser fails."""

    def __post_init__(self) -> None:
        if not 0 < self.threshold_ratio <= 1 or self.threshold_tokens < 0 or self.keep_recent_messages < 1:
            raise ValueError(f"invalid compaction policy: {self}")

    @classmethod
    def from_settings(cls, settings: CompressionSettings) -> CompactionPolicy:
        return cls(threshold_ratio=settings.threshold, threshold_tokens=settings.threshold_tokens)

    def trigger_tokens(self, context_window: int) -> int:
        ratio_trigger = int(self.threshold_ratio * context_window)
        return min(ratio_trigger, self.threshold_tokens) if self.threshold_tokens > 0 else ratio_trigger

    def for_child(self, child_threshold_tokens: int) -> CompactionPolicy:
        """The policy for a child given ``delegation.compression_threshold_tokens``.

        Values below 16,000 (0 included) leave the policy unchanged; nonzero ones are
        warned about once per value. Otherwise the lower absolute trigger wins, so this
        never raises the trigger, and the ratio trigger still applies on top."""
        value = int(child_threshold_tokens)
        if value < CHILD_THRESHOLD_FLOOR:
            if value != 0 and value not in _warned_child_values:
                _warned_child_values.add(value)
                log.warning(
                    "delegation.compression_threshold_tokens %d is below %d and has no effect",
                    value, CHILD_THRESHOLD_FLOOR,
                )
            return self
        cap = min(self.threshold_tokens, value) if self.threshold_tokens > 0 else value
        return replace(self, threshold_tokens=cap)


class Compactor:
    """Summarises older messages of a session in place; await it before each model call.

    Never raises for a failing summariser, so compaction cannot end a turn. When the session's
    own model fails as a provider that is down, busy or refuses the gateway (`_PUT_OFF_KINDS`),
    the messages stay as they are and compacting waits for the session's next turn (or a refusal
    as too long, which cannot wait); any other failure falls back to an extractive summary.
    Cancellation (a hard interrupt) propagates and leaves the messages untouched. It does not
    compact again until the session has a new message, so one oversized recent message cannot
    make it loop. One instance may serve many sessions; `compactions` counts them all."""

    def __init__(self, policy: CompactionPolicy = CompactionPolicy(), *, summarizer_model: Model | None = None) -> None:
        self.policy = policy
        self.summarizer_model = summarizer_model
        self.compactions = 0
        # The last message seen right after compacting, per session: unchanged means nothing new.
        self._last_after: weakref.WeakKeyDictionary[AgentSession, Mapping[str, Any]] = weakref.WeakKeyDictionary()
        # Per session: (its messages list, how many were measured, the last of them, eighths, extra).
        # Messages are only ever appended between compactions, so each call measures only the new
        # ones instead of the whole history.
        self._tallies: weakref.WeakKeyDictionary[AgentSession, tuple] = weakref.WeakKeyDictionary()
        # Per session: the turn (its `turns_run`) in which its summariser failed as an outage; not asked again in it.
        self._put_off: weakref.WeakKeyDictionary[AgentSession, int] = weakref.WeakKeyDictionary()
        # Per session: (its tools' schemas, their estimate), weighed once per tool set (`AgentSession.tool_schemas`).
        self._schema_weights: weakref.WeakKeyDictionary[AgentSession, tuple[list, int]] = weakref.WeakKeyDictionary()

    async def __call__(self, session: AgentSession, overflow: ModelError | None = None) -> bool:
        """Compact ``session`` if its estimated prompt reached the trigger; True when it did.

        ``overflow``: the server refused the session's last request as over the model's context
        window (``model.context_window`` says more than the server has). Then compact whatever the
        estimate says, with the summariser's prompt and the summary bounded by what the failed
        request showed to be too long (half of it, or of the window the server named)."""
        try:
            return await self._compact(session, overflow)
        except Exception:  # a compaction bug must not end the turn; the model call may still fit
            log.warning("compaction of session %s failed", session.session_id, exc_info=True)
            return False

    async def _compact(self, session: AgentSession, overflow: ModelError | None) -> bool:
        messages = session.messages
        if not messages or (overflow is None and self._last_after.get(session) is messages[-1]):
            return False
        if overflow is None and self._put_off.get(session) == session.turns_run:
            return False
        # Every request carries the tools' schemas beside the messages: they count against the window too.
        schemas = self._schema_tokens(session)
        before = self._estimate(session) + schemas
        window = context_window(session.model)
        trigger = _trigger(self.policy.trigger_tokens(window), window, schemas)
        if overflow is None and before - schemas < trigger:
            return False
        head = 1 if messages[0].get("role") == "system" else 0
        shortened = _shorten_tool_results(messages, head, window, schemas)
        if shortened:
            self._tallies.pop(session, None)
            session.history_version += 1
            log.warning("session %s: %d tool result(s) were longer than a quarter of the model's context window "
                        "(%d tokens), or than their share of half of it with the other results of their answer (less "
                        "the %d tokens of the tools' schemas), and were cut to their start and end",
                        session.session_id, shortened, window, schemas)
            before = self._estimate(session) + schemas
            if overflow is None and before - schemas < trigger:
                return self._compacted(session)
        # The user's newest message is what the turn answers: it stays word for word, after the summary.
        newest = _newest_user_message(messages, head)
        if newest == len(messages) - 1 and _past_room(messages, head, window, schemas):
            # No answer read it yet, and it is longer alone than the window leaves it (a pasted log): no summary of
            # the conversation before it makes it fit, so none is paid for, and the conversation stays whole.
            log.info("session %s: the user's newest message alone is longer than the model's context window leaves "
                     "it; the conversation is not compacted for it", session.session_id)
            return self._compacted(session) if shortened else False
        # What the summary and the messages kept after it may take: the window less the system prompt, the tools'
        # schemas and an eighth of it (`_trigger`). Half of it at most goes to the kept messages (the user's newest
        # aside), and the summary gets what they leave, so the request after compacting fits the window.
        room = window - schemas - estimate_tokens(messages[:head]) - window // SCHEMA_RESERVE
        alone = estimate_tokens([messages[newest]]) if newest is not None else 0
        limit = max(1, (room - alone) // 2)
        if overflow is not None:
            limit = min(limit, max(1, (min(before, window) - schemas) // 2))
        cut = _cut_point(messages, head, self.policy.keep_recent_messages)
        tail = head if cut is None else cut  # kept whole, all of the conversation when nothing is left to summarise
        if overflow is not None or estimate_tokens(
                [m for at, m in enumerate(messages[tail:], tail) if at != newest]) > limit:
            cut = _cut_within(messages, head, self.policy.keep_recent_messages, newest, limit)
        older = messages[head:cut] if cut is not None else []
        kept = [messages[newest]] if newest is not None and cut is not None and newest < cut else []
        rest = [m for m in older if not kept or m is not kept[0]]
        length = max(SUMMARY_FLOOR, min(self.policy.summary_max_tokens, room - _HEADER_TOKENS - estimate_tokens(kept)
                                        - estimate_tokens(messages[cut:] if rest else [])))
        if not rest or (overflow is not None and all(_is_summary(m) for m in rest)
                        and estimate_tokens(rest) <= length + MESSAGE_OVERHEAD):
            log.debug("session %s is over the compaction trigger but has nothing to summarise", session.session_id)
            return self._compacted(session) if shortened else False
        known_smaller = window < session.model.context_window  # the server named it: the summariser must fit too
        budget = _budget_chars(before, window, older) if overflow is not None or known_smaller else None
        summarised = await self._summarise(session, older, budget, forced=overflow is not None, length=length)
        if summarised is None:
            self._put_off[session] = session.turns_run
            return self._compacted(session) if shortened else False
        summary, written = summarised
        messages[head:cut] = [{"role": "user", "content": f"{SUMMARY_HEADER}\n{summary}"}, *kept]
        if not written:
            session.summary_failed()
        self._tallies.pop(session, None)
        session.history_version += 1
        log.info(
            "compacted %d messages of session %s%s: ~%d -> ~%d tokens (trigger %d)", len(older), session.session_id,
            " after the server refused it as too long" if overflow is not None else "",
            before, estimate_tokens(messages) + schemas, trigger,
        )
        return self._compacted(session)

    def _compacted(self, session: AgentSession) -> bool:
        """Count a compaction of ``session`` that changed its messages, and not again until it has a new one."""
        self._last_after[session] = session.messages[-1]
        self.compactions += 1
        return True

    def _schema_tokens(self, session: AgentSession) -> int:
        """`schema_tokens` of the session's tools' schemas, weighed again only when its tools change."""
        schemas = session.tool_schemas()
        weighed = self._schema_weights.get(session)
        if weighed is None or weighed[0] is not schemas:
            weighed = self._schema_weights[session] = (schemas, schema_tokens(schemas))
        return weighed[1]

    def _estimate(self, session: AgentSession) -> int:
        """`estimate_tokens` of the session's messages, measuring only those added since the last call."""
        messages = session.messages
        tally = self._tallies.get(session)
        if tally is not None and tally[0] is messages and 0 < tally[1] <= len(messages) and messages[tally[1] - 1] is tally[2]:
            eighths, extra = measure(messages[tally[1]:])
            eighths, extra = eighths + tally[3], extra + tally[4]
        else:
            eighths, extra = measure(messages)
        self._tallies[session] = (messages, len(messages), messages[-1], eighths, extra)
        return tally_tokens(eighths, extra)

    async def _summarise(self, session: AgentSession, older: Sequence[Mapping[str, Any]],
                         budget: int | None, *, forced: bool, length: int | None = None) -> tuple[str, bool] | None:
        """A summary of ``older``, and whether the model wrote it (else it is extractive); ``budget``
        (characters) bounds the summariser's prompt, and half of it the summary, when the model's
        real window is smaller than its settings say; ``length`` (tokens, the policy's `summary_max_tokens` when
        None) the summary. None when the session's own model failed as an outage (`_PUT_OFF_KINDS`) and compacting
        may wait (not ``forced``)."""
        model = self.summarizer_model or session.model
        length = self.policy.summary_max_tokens if length is None else length

        def fit(text: str) -> str:
            """A summary as long as one may be: within the tokens, and within half the budget's characters."""
            return within_tokens(text if budget is None else text[: budget // 2], length)

        # An earlier summary is all that is left of the oldest messages: it goes whole (it fitted when
        # written), not cut as one ordinary message is; the others share what remains.
        earlier = sum(len(fit(_summary_body(m))) for m in older if _is_summary(m))
        others = sum(1 for m in older if not _is_summary(m)) or 1
        width = _RENDER_CHARS if budget is None else max(1, min(_RENDER_CHARS, (budget - earlier) // others))
        request = ModelRequest(
            messages=[
                {"role": "system", "content": SUMMARY_PROMPT},
                {"role": "user", "content": "\n\n".join(_render(m, width, fit) for m in older)},
            ],
            role="compactor",
            turn_index=session.turns_run,
            metadata={"session_id": session.session_id, "message_count": len(older)},
        )
        started = session.clock.monotonic()
        try:
            response = await model.complete(request)
        except Exception as exc:  # ModelError or a provider bug: the extractive summary still helps
            if not forced and model is session.model and getattr(exc, "kind", None) in _PUT_OFF_KINDS:
                log.warning("summariser failed (%s: %s); the conversation is left whole until the session's next turn",
                            type(exc).__name__, exc)
                await _model_call_hook(session, model, started, None, exc.kind)
                return None
            log.warning("summariser failed (%s: %s); using an extractive summary", type(exc).__name__, exc)
            await _model_call_hook(session, model, started, None, getattr(exc, "kind", type(exc).__name__))
            return fit(self._extractive(older, length)), False
        except asyncio.CancelledError:
            if session._hard_cancel_sent:  # a hard interrupt of the turn: its hooks hear the call ended
                await _model_call_hook(session, model, started, None, "interrupted")
            raise
        # The summary call is real spend: the session's totals (and the turn's) count it, and so do the hooks.
        session.add_cost(response.usage, response.cost_usd, api_calls=1)
        await _model_call_hook(session, model, started, response, None)
        text = (response.text or "").strip()
        return (fit(text), True) if text else (fit(self._extractive(older, length)), False)

    def _extractive(self, older: Sequence[Mapping[str, Any]], length: int | None = None) -> str:
        """An earlier summary (up to half the summary's length, its oldest facts first), then the first
        line of each older user or assistant message, truncated."""
        width = self.policy.fallback_line_chars
        length = self.policy.summary_max_tokens if length is None else length
        lines = []
        for message in older:
            if _is_summary(message):
                lines.append(within_tokens(_summary_body(message), length // 2).strip())
                continue
            role = message.get("role")
            text, steered = _steered(message)
            first = next(iter(text.strip().splitlines()), "")
            if role in ("user", "assistant") and first:
                lines.append(f"- {role}: {first[:width]}{'…' if len(first) > width else ''}")
            first = next(iter(steered.strip().splitlines()), "")
            if first:
                more = "…" if len(first) > width else ""
                lines.append(f"- user, while the assistant worked: {first[:width]}{more}")
        return within_tokens("\n".join(lines), length) or "(no text in the earlier messages)"


async def _model_call_hook(session: AgentSession, model: Any, started: float, response: ModelResponse | None,
                           error: str | None) -> None:
    """``model_call`` for the summariser's call, as the session runs it for its own (role ``compactor``)."""
    hooks = session.hooks
    if hooks is None or not hooks.has("model_call"):
        return
    turn = active_turn()
    usage = response.usage if response is not None else Usage()
    await hooks.run(
        "model_call", session_id=session.session_id, turn_id=turn.turn_id if turn is not None else None,
        role="compactor", model=(response.model if response is not None else None) or getattr(model, "name", None),
        prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
        cost_usd=response.cost_usd if response is not None else None,
        duration_seconds=session.clock.monotonic() - started, error=error,
    )


def _cut_point(messages: Sequence[Mapping[str, Any]], head: int, keep: int) -> int | None:
    """Index where the verbatim tail starts, or None when nothing can be summarised.

    The tail never starts at a `tool` message, so each result stays with the assistant
    message that called it: prefer moving the cut earlier (keeping more), else later."""
    start = max(len(messages) - keep, head)
    earlier = start
    while earlier > head and messages[earlier].get("role") == "tool":
        earlier -= 1
    if earlier > head:
        return earlier
    later = start
    while later < len(messages) and messages[later].get("role") == "tool":
        later += 1
    return later if head < later < len(messages) else None


def _cut_within(messages: Sequence[Mapping[str, Any]], head: int, keep: int, newest: int | None,
                limit: int) -> int | None:
    """`_cut_point` for the last ``keep`` messages, or for fewer, down to one, while those are estimated at more
    than ``limit`` tokens (the user's newest message, at ``newest``, aside: it is kept whatever) or leave nothing
    to summarise. A message too long for the window among them (a long paste, no longer the user's newest) was
    kept as it was, and the server refused every request of the chat until newer messages had pushed it out."""
    cut = _cut_point(messages, head, keep)
    while keep > 1 and (cut is None or estimate_tokens(
            [m for at, m in enumerate(messages[cut:], cut) if at != newest]) > limit):
        keep -= 1
        cut = _cut_point(messages, head, keep)
    return cut


TOOL_RESULT_SHARE = 4
"""A tool result may take up to this fraction (one over it) of the model's context window; a longer one is cut
once compacting is due. Kept whole, one oversized result (a plugin's tool answering a whole web page or log)
stays among the recent messages compaction keeps verbatim: every request was refused as too long, and so were
the chat's next turns, until enough newer messages had pushed it out of them."""


ANSWER_RESULTS_SHARE = 2
"""The results of one answer's tool calls may take up to this fraction (one over it) of the window together; when
they take more, the longest are cut to an equal share once compacting is due. Compaction never parts a call from
its results: six results of a fifth of the window each, none cut on its own, were a tail that no summary could
shorten, and the turn, and the chat's next turns, were refused as too long until newer messages pushed it out."""


def _shorten_tool_results(messages: list[dict[str, Any]], start: int, window: int, schemas: int = 0) -> int:
    """Replace each tool result from ``start`` on whose text is estimated at more than a `TOOL_RESULT_SHARE` of
    ``window`` tokens, or at more than its share of an `ANSWER_RESULTS_SHARE` of what the window leaves beside the
    ``schemas`` tokens of the tools' schemas when the results of one answer take more together, by a new message
    holding its start and end and a note of what was left out; how many. The schemas count there: a quarter of the
    window leaves them room, half of it did not (8k, with 3k of a plugin's schemas and a summary of 2k)."""
    limit, together = max(1, window // TOOL_RESULT_SHARE), max(1, (window - schemas) // ANSWER_RESULTS_SHARE)
    shortened = 0
    index = start
    while index < len(messages):
        if messages[index].get("role") != "tool":
            index += 1
            continue
        end = index
        while end < len(messages) and messages[end].get("role") == "tool":
            end += 1
        weights = [weight(m["content"]) if isinstance(m.get("content"), str) else 0 for m in messages[index:end]]
        share = equal_share(weights, 8 * together)
        for at, eighths in enumerate(weights, index):
            over_share = eighths > share and TOO_LONG_TOGETHER not in messages[at]["content"]  # cut once is enough
            # One longer than a quarter is cut to its share instead when that is less: cut to the quarter's start and
            # end, three results of an answer still took more than half the window, and the request was refused.
            if eighths > 8 * limit and not (over_share and share // 8 < limit // 2 + limit // 4):
                messages[at] = _cut_result(messages[at], limit // 2, limit // 4, TOO_LONG)
                shortened += 1
            elif over_share:
                # The note takes its part of the share, so the result is not cut again at the next compaction.
                kept = max(3, share // 8 - weight(TOO_LONG_TOGETHER) // 8 - 16)
                messages[at] = _cut_result(messages[at], kept * 2 // 3, kept // 3, TOO_LONG_TOGETHER)
                shortened += 1
        index = end
    return shortened


def equal_share(weights: Sequence[int], budget: int) -> int:
    """The most each of ``weights`` may keep for their sum to be within ``budget`` when only those over it are
    cut (to it): the shorter ones keep all of theirs. At least the largest when they fit as they are."""
    if sum(weights) <= budget:
        return max(weights, default=0)
    left = budget
    for count, eighths in enumerate(sorted(weights)):
        share = left // (len(weights) - count)
        if eighths > share:
            return share
        left -= eighths
    return left


TOO_LONG = ("it was longer than a quarter of the model's context window; ask for less at a time (a range, a "
            "narrower query)")
TOO_LONG_TOGETHER = ("the results of the tool calls it came with were longer than half of the model's context window "
                     "together; ask for less at a time (fewer calls, a range, a narrower query)")


def _cut_result(message: dict[str, Any], start: int, end: int, why: str) -> dict[str, Any]:
    """A new message for the tool result ``message``: ``start`` tokens of its start, ``end`` of its end, and a
    note saying how much was left out and ``why``."""
    content = message["content"]
    first = within_tokens(content, start)
    last = within_tokens(content[::-1], end)[::-1]
    note = f"[… {len(content) - len(first) - len(last)} characters of this tool result were left out: {why}]"
    return {**message, "content": f"{first}\n{note}\n{last}"}


def _budget_chars(tokens: int, window: int, older: Sequence[Mapping[str, Any]]) -> int:
    """Characters of ``older`` the summariser may be sent to summarise a conversation of ``tokens``
    (estimated) that the server refused, or will refuse, as too long: half of it, or of the window
    the server named if smaller, so the summariser's own request fits with room for its answer.
    Converted at ``older``'s own characters a token: four for English, about one for Chinese."""
    return max(1, int(max(1, min(tokens, window) // 2) * chars_per_token(older)))


def _is_summary(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "user" and _text(message.get("content")).startswith(SUMMARY_HEADER)


def _summary_body(message: Mapping[str, Any]) -> str:
    """What a summary message says, without its header."""
    return _text(message.get("content"))[len(SUMMARY_HEADER):].strip()


SCHEMA_RESERVE = 8
"""The window's share (an eighth) kept free beside the messages and the tools' schemas when the schemas cap the
trigger (`_trigger`): for the estimate's error and the answer."""


def _trigger(policy: int, window: int, schemas: int) -> int:
    """The messages' estimate at which compaction is due: the policy's share of the window (``policy``), unless the
    ``schemas`` tokens of the tools' schemas every request carries leave less than that (less an eighth of the
    window) beside them. Not the policy's share less the schemas: on a 4,096-token window the built-in tools'
    1,200 left the messages some 850 tokens, less than a summary, and every turn was compacted again."""
    return max(1, min(policy, window - schemas - window // SCHEMA_RESERVE))


_HEADER_TOKENS = estimate_tokens([{"role": "user", "content": f"{SUMMARY_HEADER}\n"}])
SUMMARY_FLOOR = 64
"""The fewest tokens a summary is cut to when the messages kept after it leave it less room in the window."""


PAST_ROOM = 4 / 3
"""How far past the room the window leaves it (beside the system prompt and the tools' schemas) a message must be
estimated before compaction gives it up as too long alone (`_past_room`): the estimate counts English at up to 133% of
what a tokenizer does, so a message estimated just over the room may fit once the conversation before it is
summarised."""


def _past_room(messages: Sequence[Mapping[str, Any]], head: int, window: int, schemas: int) -> bool:
    """Whether the last message is estimated at more than `PAST_ROOM` times the tokens the ``window`` leaves it beside
    the system prompt (``messages[:head]``) and the ``schemas`` tokens of the tools' schemas."""
    room = window - estimate_tokens(messages[:head]) - schemas
    return estimate_tokens(messages[-1:]) > PAST_ROOM * room


def _newest_user_message(messages: Sequence[Mapping[str, Any]], head: int) -> int | None:
    """Index of the last message the user wrote (a summary is not one, nor a steer note), if any after ``head``."""
    for index in range(len(messages) - 1, head - 1, -1):
        message = messages[index]
        if message.get("role") != "user" or _is_summary(message):
            continue
        if not _text(message.get("content")).startswith(STEER_NOTE):  # a steer is no request (`_steered`)
            return index
    return None


def _steered(message: Mapping[str, Any]) -> tuple[str, str]:
    """(the text of ``message``, the text the user steered into it): a steer note (`STEER_NOTE`) is all
    steered; a tool result carries what was steered while its tool ran after its output. A steer is no
    request of a turn of its own: kept word for word after the summary, as the user's newest message is,
    the model took it for a new one and did again what it had done for it; and cut with a long tool result
    it came after (the summariser is sent each message's start), it was lost."""
    text = _text(message.get("content"))
    role = message.get("role")
    if role == "user" and text.startswith(STEER_NOTE):
        return "", text[len(STEER_NOTE):].strip()
    at = text.rfind(f"\n\n{STEER_NOTE}\n") if role == "tool" else -1
    return (text, "") if at < 0 else (text[:at], text[at + len(STEER_NOTE) + 3:])


def _render(message: Mapping[str, Any], width: int, summary: Callable[[str], str]) -> str:
    """One message for the summariser: ``width`` characters of its text and of each call's arguments;
    an earlier summary as such (never as words the user wrote), as much of it as ``summary`` keeps."""
    if _is_summary(message):
        return f"EARLIER SUMMARY: {summary(_summary_body(message))}"
    role = str(message.get("role", "?")).upper()
    text, steered = _steered(message)
    parts = [text[:width]]
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        parts.append(f"(calls {function.get('name')} {str(function.get('arguments', ''))[:width]})")
    if steered:
        parts.append(f"{STEER_NOTE} {steered[:width]}")
    return f"{role}: " + " ".join(p for p in parts if p)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return "" if content is None else json.dumps(content, default=str)
