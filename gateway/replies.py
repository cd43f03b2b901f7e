"""What the chat reads when a turn ends: its final text, or a short sentence saying why not."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from typing import Any

from agent import TurnResult, exceeds_context, model_failure_kind
from agent._errors import refuses_tools, server_down
from agent._token_estimate import IMAGE_TOKENS
from gateway.logging import redact
from platforms.base import Inbound
from platforms.formatting.blank import is_blank

log = logging.getLogger("gateway.replies")

SILENCE = "NO_REPLY"
"""A completion turn's reply that is this sends nothing (the model's way to stay quiet about
background results; `is_silence` says which spellings count). A reply to a user message is always sent."""
_SILENCES = {SILENCE, "[SILENT]"}
"""Also the reference system's other silence token, which a model used to it may write."""
_WRAPPING = "*_`\"' "
CRASHED = "Sorry — something went wrong on my side while handling that. Please try again."
MODEL_FAILED = "Sorry — I could not get an answer from the model just now. Please try again in a moment."
MODEL_BUSY = ("Sorry — I could not get an answer from the model just now, and its provider asked me to wait. "
              "Please try again in about {wait}.")
EMPTY_ANSWER = "(The model ended its turn without writing an answer. Please try again, or put it another way.)"
CUT_OFF = "(The answer was cut off here: the model reached its limit on output length.)"
CUT_OFF_UNSAID = ("(The model reached its limit on output length before it could answer: what it tried to write "
                  "at once was too long. Please ask for less at a time.)")
WITHHELD = "(The rest of this answer was withheld by the model provider's content filter.)"
TOO_LONG = "Sorry — this conversation has grown longer than the model can take in. Send /new to start a new one."
MESSAGE_TOO_LONG = ("Sorry — your message is too long for the model to take in: it comes to about {length} words, and "
                    "the model takes about {room} at a time. Please send a shorter part of it, or a summary of it.")
"""What a message's turn reads when its message alone is longer than the model's window (a pasted log;
`agent.TurnResult.message_too_long`): `TOO_LONG`'s /new would not help, the message being as long in a new
conversation."""
PICTURES_TOO_MANY = ("Sorry — your message is too long for the model to take in with its {count} pictures. Please "
                     "send fewer at a time, or describe them in words.")
"""`MESSAGE_TOO_LONG` for a message whose text would fit, its pictures not (an album): its few words are not the
thousands the pictures count as."""
PICTURE_TOO_LONG = ("Sorry — your message is too long for the model to take in with its picture. Please describe "
                    "the picture in words instead.")
"""`PICTURES_TOO_MANY` for a message of one picture."""
WINDOW_TOO_SMALL = ("Sorry — the model's context window is too small to hold my instructions and tools, so I cannot "
                    "answer any message until the operator sets it up with a larger one.")
"""What a message's turn reads when the system prompt and the tools' schemas alone fill the model's window (room 0
in `agent.TurnResult.message_too_long`): no message is short enough, and "the model takes about 0 words" said
nothing."""
AUTH_REFUSED = ("Sorry — the model provider did not accept this gateway's credentials, so I cannot answer until "
                "the operator fixes them.")
NO_SUCH_MODEL = ("Sorry — the model provider does not know the model this gateway is set up to use, so I cannot "
                 "answer until the operator fixes that.")
OUT_OF_CREDIT = ("Sorry — this gateway's account with the model provider has run out of credit, so I cannot answer "
                 "until the operator tops it up.")
FILTERED = "Sorry — the model provider's content filter blocked this request. Please put it another way."
RESULTS_FILTERED = ("Sorry — the model provider's content filter blocked the results of the background work, so I "
                    "cannot report on them here; /agents lists the subagents and how each ended.")
"""`FILTERED` for a completion turn: nobody asked anything to put another way, and the results are left out of the
conversation as a blocked message is (`agent.AgentSession.run_turn`)."""
RESULTS_UNREPORTED = ("Sorry — the background work has finished, but I could not get an answer from the model just "
                      "now to report on it. Ask me about it again in a moment; /agents lists the subagents and how "
                      "each ended.")
RESULTS_UNREPORTED_BUSY = ("Sorry — the background work has finished, but I could not get an answer from the model to "
                           "report on it, and its provider asked me to wait. Ask me about it again in about {wait}; "
                           "/agents lists the subagents and how each ended.")
"""`MODEL_FAILED` and `MODEL_BUSY` for a completion turn: nobody asked anything to try again, and the chat, told
the work was under way, would not learn it had finished. Its results stay in the conversation, for the next turn."""
RESULTS_UNREPORTED_DOWN = ("Sorry — the background work has finished, but the model is unreachable at the moment: it "
                           "has failed every request for a while, so I did not ask it to report on the work. Ask me "
                           "about it again in a few minutes; /agents lists the subagents and how each ended.")
"""`gateway.turn_runner.MODEL_DOWN` for a completion turn whose model call was not sent, its server known to be down
(`agent.models._outage`): "in a moment" is wrong advice then, the next moment's call not being sent either."""
MODEL_DOWN_WAITING = ("The model is unreachable at the moment: it has failed every request for a while. I will answer "
                      "this as soon as it is back, waiting up to {wait} for it; /stop cancels.")
"""Told once, as an interim message, when a message's turn first waits for its model's server (or model) known to be
down to come back (``model.wait_when_down_seconds``, `agent.models._outage.WaitWhenDown`); past that wait the turn
ends with `gateway.turn_runner.MODEL_DOWN`."""
REFUSED = ("Sorry — the model provider refused the request as one the model this gateway is set up to use cannot "
           "take (a setting or a feature it does not support), so trying again will not help until the operator "
           "changes the model or its settings.")
TOOLS_REFUSED = ("Sorry — the model server this gateway uses is not set up for the tools I answer with, so I cannot "
                 "answer until the operator sets it up for tool calls or changes the model.")
"""`REFUSED` for a server that refuses every request offering tools (`agent._errors.TOOLS_NOT_SET_UP`): the log names
the server flag or the model to change."""
PICTURE_UNREADABLE = ("Sorry — the model provider could not read the picture you sent, so I have left that message "
                      "out of our conversation. Please send the picture in another format, or describe it in words.")
PICTURES_UNREADABLE = ("Sorry — the model provider could not read one of the pictures you sent, so I have left that "
                       "message out of our conversation. Please send the pictures in another format, or describe them "
                       "in words.")
"""`PICTURE_UNREADABLE` for a message of several pictures (an album): the provider refuses the request for any one
of them, and does not say which."""
REGION_REFUSED = ("Sorry — the model provider refuses requests from where this gateway runs (its country or its "
                  "network), so I cannot answer until the operator fixes that.")
SUMMARY_FAILED = ("(Our conversation had grown long, and the model could not summarise its earlier part just now: "
                  "I kept only the first line of each of those messages, so remind me of anything there I should "
                  "keep in mind.)")
_PERMANENT = {"auth": AUTH_REFUSED, "not_found": NO_SUCH_MODEL, "quota": OUT_OF_CREDIT, "content_filter": FILTERED,
              "bad_image": PICTURE_UNREADABLE, "blocked": REGION_REFUSED}
"""Model failures that trying again in a moment cannot cure, by `agent.ModelError` kind: the chat
is told what is wrong, so nobody keeps trying; the detail is in the log. So is ``bad_request``
(`REFUSED`), unless the request was too long (`TOO_LONG`, or `MESSAGE_TOO_LONG` for a message too long alone)."""
_TO_FIX = {
    "auth": "model.api_key, or $OPENAI_API_KEY when model.api_key is unset",
    "not_found": "model.name and model.base_url",
    "blocked": "that model.base_url is served to this host's country and network (a proxy or VPN may be in the way)",
}
"""The settings an operator fixes for the parent model's permanent failures, named in the log."""


def operator_hint(kind: str | None) -> str:
    """What to append to the operator's account of a parent turn's model failure of ``kind``:
    ``; check <settings>``, or nothing when no setting would cure it."""
    settings = _TO_FIX.get(kind or "")
    return f"; check {settings}" if settings else ""


def _model_failed(retry_after: float | None, kind: str, down: bool) -> str:
    """`MODEL_FAILED`, or `MODEL_BUSY` where the provider asked for a wait of a minute or more: a 429 asking
    for an hour fails at once (the SDK waits two minutes at most), and "in a moment" would be wrong advice.
    Their `RESULTS_UNREPORTED` forms for a turn of ``kind`` ``completion``; `RESULTS_UNREPORTED_DOWN` for one whose
    call was not sent, ``down`` (a message's turn reads `gateway.turn_runner.MODEL_DOWN`, chosen there)."""
    completion = kind == "completion"
    if completion and down:
        return RESULTS_UNREPORTED_DOWN
    if retry_after is None or not math.isfinite(retry_after) or retry_after < 60:
        return RESULTS_UNREPORTED if completion else MODEL_FAILED
    return (RESULTS_UNREPORTED_BUSY if completion else MODEL_BUSY).format(wait=_wait(retry_after))


def down_waiting_text(seconds: float) -> str:
    """`MODEL_DOWN_WAITING` for a wait of up to ``seconds``."""
    whole = _up(seconds)
    wait = _wait(seconds, _up) if whole >= 60 else "a second" if whole <= 1 else f"{whole} seconds"
    return MODEL_DOWN_WAITING.format(wait=wait)


def _up(units: float) -> int:
    """``units`` rounded up, so that a wait said "up to" is never shorter than the wait (80 s is "2 minutes", not
    "a minute"); the tolerance keeps a whole number computed from a float (479.9999999 s of 8 minutes) as it is."""
    return math.ceil(units - 1e-6)


def _wait(seconds: float, rounding: Callable[[float], int] = round) -> str:
    """``seconds`` rounded as a person says a wait: a minute, 5 minutes, an hour, 3 hours, 2 days."""
    minutes = rounding(seconds / 60)
    if minutes < 60:
        return "a minute" if minutes == 1 else f"{minutes} minutes"
    hours = rounding(seconds / 3600)
    if hours < 48:
        return "an hour" if hours == 1 else f"{hours} hours"
    return f"{rounding(seconds / 86400)} days"


def reply_text(kind: str, result: TurnResult | None, *, spoke: bool = False, pictures: int = 0,
               picture_tokens: int | None = None) -> str | None:
    """The text to send for a turn of ``kind`` that ended with ``result`` (None: it crashed);
    None when nothing is to be sent. ``spoke``: the turn sent messages itself (``send_message``, ``send_file``),
    so a completed turn without a final answer has said what it had to. ``pictures``: how many the turn's
    message held (`pictures_in`), for the news of one the provider could not read; ``picture_tokens``: what the
    estimate counted for them (`agent._token_estimate.pictures_tokens`; None: `IMAGE_TOKENS` each), for the length
    of its text alone when it is too long."""
    if result is None:
        text = CRASHED
    elif result.exit_reason == "error":
        # The detail (a provider's "401 - Incorrect API key …") is for the operator, not the chat.
        log.warning("turn %s ended early: the model call failed: %s%s", result.turn_id, result.error or "no detail",
                    operator_hint(result.error_kind))
        filtered_results = kind == "completion" and result.error_kind == "content_filter"
        several = result.error_kind == "bad_image" and pictures > 1  # an album: which one, the provider does not say
        permanent = PICTURES_UNREADABLE if several else _PERMANENT.get(result.error_kind or "")
        text = RESULTS_FILTERED if filtered_results else permanent or (
            _message_too_long(result.message_too_long, pictures, picture_tokens)
            if result.message_too_long and kind != "completion"
            else TOO_LONG if exceeds_context(result.error or "")
            else (TOOLS_REFUSED if refuses_tools(result.error or "") else REFUSED) if result.error_kind == "bad_request"
            else _model_failed(result.retry_after, kind, _down(result)))
        if result.text:
            text = f"{result.text}\n\n({text})"
    elif result.exit_reason == "interrupted":
        text = result.text  # interrupted by an outside request (a platform shutdown): keep what there is
    elif result.exit_reason == "max_iterations":
        text = (result.text + "\n\n" if result.text else "") + "(I stopped here: this turn ran out of steps.)"
    else:  # completed: an empty answer (all its tokens spent on reasoning, say) must not read as a lost one
        # A blank one too (only zero-width spaces, say): no platform shows it, and Telegram refuses it.
        answered = not is_blank(result.text or "")
        text = result.text if answered else (None if spoke else CUT_OFF_UNSAID if result.truncated else EMPTY_ANSWER)
        if (result.truncated or result.filtered) and answered:  # else it reads as the whole answer
            text = f"{text}\n\n{CUT_OFF if result.truncated else WITHHELD}"
    if not text or (kind == "completion" and is_silence(text)):
        return None
    return f"{text}\n\n{SUMMARY_FAILED}" if result is not None and result.summary_failed else text


def _message_too_long(tokens: tuple[int, int], pictures: int = 0, picture_tokens: int | None = None) -> str:
    """`MESSAGE_TOO_LONG` for a message of ``tokens[0]`` estimated tokens, ``picture_tokens`` of them its
    ``pictures``' (None: `IMAGE_TOKENS` each), where the model's window leaves it ``tokens[1]``; `PICTURES_TOO_MANY`
    when its text alone would fit, and `WINDOW_TOO_SMALL` when nothing is left."""
    length, room = tokens
    if room <= 0:
        return WINDOW_TOO_SMALL
    # The words: a picture's estimate is none, and counts its size (a screenshot 1,105 tokens), not a flat 512.
    text = length - (pictures * IMAGE_TOKENS if picture_tokens is None else picture_tokens)
    if pictures and text <= room:
        return PICTURE_TOO_LONG if pictures == 1 else PICTURES_TOO_MANY.format(count=pictures)
    return MESSAGE_TOO_LONG.format(length=_about_words(text), room=_about_words(room))


def _about_words(tokens: int) -> str:
    """``tokens`` in words, rounded as a person gives a length: three quarters of a word a token (the rule of thumb
    for English; about a character of Chinese), to two figures (79,000; 2,100; 750)."""
    words = round(tokens * 3 / 4)
    figures = len(str(words))
    return f"{round(words, 2 - figures) if figures > 2 else words:,}"


def _down(result: TurnResult) -> bool:
    """Whether ``result``'s model call was not sent, its server known to be down; a call held for a 429 is told
    of as the wait its server asked for (`MODEL_BUSY`)."""
    return result.error_kind != "rate_limited" and server_down(result.error or "")


def pictures_in(content: str | list[dict[str, Any]] | None) -> int:
    """How many pictures a turn's input holds: its ``image_url`` parts (`gateway.attachments.turn_input`)."""
    return 0 if not isinstance(content, list) else sum(part.get("type") == "image_url" for part in content)


def is_silence(text: str) -> bool:
    """``text`` is the silence token alone, as asked (``NO_REPLY``), or as models often write it anyway:
    in any case, in code or bold, with a full stop, or ``[SILENT]``. Sent, any of these would read as a
    message to the chat about nothing."""
    return text.strip().strip(_WRAPPING).rstrip(".!").strip(_WRAPPING).upper() in _SILENCES


_CHILD_PERMANENT = {
    "auth": "the model provider did not accept this gateway's credentials",
    "not_found": "the model provider does not know the model it was set up to use",
    "quota": "this gateway's account with the model provider has run out of credit",
    "content_filter": "the model provider's content filter blocked it",
    "bad_image": "the model provider could not read a picture it was given",
    "blocked": "the model provider refuses requests from where this gateway runs",
}
CHILD_REFUSED = "the model provider refused its request as one the model it was set up to use cannot take"
CHILD_TOOLS_REFUSED = f"{CHILD_REFUSED}: its model server is not set up for tool calls"
"""`CHILD_REFUSED` where the server refuses every request that offers tools (`agent._errors.TOOLS_NOT_SET_UP`), as a
turn's reads `TOOLS_REFUSED`: the log names the server flag or the model to change."""
CHILD_TOO_LONG = "its work grew longer than the model can take in"
CHILD_MODEL_FAILED = "it could not get an answer from the model just now"
CHILD_MODEL_DOWN = ("the model is unreachable at the moment (it has failed every request for a while), so its call "
                    "was not sent")
"""A subagent's model call not sent, its server known to be down (`agent.models._outage`), as a turn's reads."""


def child_failure_reason(error: str) -> str:
    """Why a subagent failed, as the chat reads it: for a failed model call the same news as a
    turn's (`reply_text`), never the provider's words, which may quote an account id or a part of
    a key (the parent model reads them in its results, the operator in the log); else ``error``,
    redacted as a log line is: a tool's exception may quote a key in a URL or a token. Redacted whole,
    before any caller cuts it: a secret cut in two is matched by no mask."""
    kind = model_failure_kind(error)
    if kind is None:
        return redact(error)
    return _CHILD_PERMANENT.get(kind) or (CHILD_TOO_LONG if exceeds_context(error)
                                          else CHILD_TOOLS_REFUSED if kind == "bad_request" and refuses_tools(error)
                                          else CHILD_REFUSED if kind == "bad_request"
                                          else CHILD_MODEL_DOWN if kind != "rate_limited" and server_down(error)
                                          else CHILD_MODEL_FAILED)


SUPPRESSED_NOTES = {
    "superseded": "(Superseded by your next message.)",
    "stop": "(Stopped by /stop.)",
    "new": "(Ended by /new.)",
    "console": "(Stopped from the operator console.)",
}
"""What a caller that tracks turn ids (the webhook platform) reads for a turn that was cut short;
on every platform, for a stop the chat did not ask for itself (`UNASKED_STOPS`)."""
UNASKED_STOPS = frozenset({"console"})
"""Turns stopped from outside their chat: its people are told, since no reply of theirs said so."""
SUPPRESSED_REASONS = {"superseded": "superseded", "stop": "/stop", "new": "/new", "console": "console"}
"""Why a suppressed completion turn's results were not delivered, as the delegation records it."""
_MARKUP = re.compile(r"([!-/:-@\[-`{-~])")
"""ASCII punctuation, which CommonMark reads as markup unless escaped with a backslash."""


def stopped_by_member(why: str | None, by: Inbound) -> str:
    """The note to a group member whose turn another member's /stop or /new (``why``: ``stop``, ``new``)
    stopped (`RunningTurn.stop_note`): only the stopper reads the command's answer. It names the stopper
    where the platform vouches for a name (`Inbound.user_name`; Slack gives none), escaped: a Discord
    name ``_bob_`` read as italics."""
    who = "@" + _MARKUP.sub(r"\\\1", by.user_name.lstrip("@")) if by.user_name else "another member"
    return f"(Ended by {who}'s /new.)" if why == "new" else f"(Stopped by {who}'s /stop.)"


def outcome(result: TurnResult | None, suppressed_by: str | None) -> str:
    """How a turn ended, for its progress message: done, stopped, superseded, shutdown or failed."""
    if suppressed_by is not None:
        return "superseded" if suppressed_by == "superseded" else "stopped"
    if result is None or result.exit_reason == "error":
        return "failed"
    if result.exit_reason == "interrupted":
        return "shutdown"
    return "done"
