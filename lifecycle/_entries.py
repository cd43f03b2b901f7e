"""delegate_task result entries, and the summary budget that protects the parent's context."""

from __future__ import annotations

import logging
import os
import re
import secrets
from pathlib import Path
from typing import Any

from agent._durable import write_whole
from agent.tools._open_unfollowed import is_swapped, open_directory
from lifecycle._child_run import ChildOutcome
from lifecycle._contract import SubagentResult, SubagentState
from lifecycle._routing import with_route

log = logging.getLogger("lifecycle.delegate")

SPILL_DIR = Path(".switchboard") / "delegation"
_TIMEOUT_FIELDS = ("timeout_seconds", "timed_out_after_seconds", "last_event_age", "timeout_phase")
_STATUS = {SubagentState.SUCCEEDED: "completed", SubagentState.INTERRUPTED: "interrupted",
           SubagentState.CANCELLED: "interrupted"}
MAX_ERROR_CHARS = 4_000
"""The most of a child's ``error`` its entry gives, with a note of how much more there was: the error is a
server's or an exception's own words, which may be a whole page (a proxy's, or a model server quoting the
request back), and whole, 2 MB of it went into the parent's context, read again at every later request (ten
children: ten times), also as a background batch's completion turn, the newest message, which compaction keeps
whole. Its start says what failed (``model request failed (kind): …``)."""
TRACE_IN_RESULT = 20
"""A result entry's ``tool_trace`` keeps the child's latest calls only, as ``/agents log`` does, and counts the
others (``tool_trace_omitted``): whole, at ~130 characters a call, a child that used its 250 steps gave 33 KB,
more than its summary may be, and ten of them 330 KB in one tool result the parent model reads again."""


def entry(task_index: int, subagent_id: str, outcome: ChildOutcome) -> dict[str, Any]:
    """One task's result as the parent model reads it; the summary is not yet budgeted."""
    trace = outcome.tool_trace
    item: dict[str, Any] = {
        "task_index": task_index,
        "subagent_id": subagent_id,
        "status": outcome.status,
        "summary": outcome.summary,
        "error": _bounded_error(outcome.error),
        "exit_reason": outcome.exit_reason,
        "truncated": outcome.exit_reason == "max_iterations",
        "api_calls": outcome.api_calls,
        "duration_seconds": round(outcome.duration_seconds, 3),
        "model": outcome.model,
        "tokens": {"input": outcome.usage.prompt_tokens, "output": outcome.usage.completion_tokens},
        "cost_usd": None if outcome.cost_usd is None else round(outcome.cost_usd, 6),
        "tool_trace": [e.to_dict() for e in trace[-TRACE_IN_RESULT:]],
    }
    if len(trace) > TRACE_IN_RESULT:
        item["tool_trace_omitted"] = len(trace) - TRACE_IN_RESULT
    timeout = outcome.timeout
    for name in _TIMEOUT_FIELDS:
        item[name] = getattr(timeout, name) if timeout is not None else None
    if outcome.schema is not None:
        item.update(outcome.schema)
    if outcome.incomplete is not None:  # said in the summary too, but for an output contract's JSON answer
        item["incomplete"] = outcome.incomplete
    return item


def routed(item: dict[str, Any], route: str | None, provider: str | None = None) -> dict[str, Any]:
    """A routed child's entry (`with_route`): it names its route, never the model behind it, nor its provider,
    also not in its ``error``, where a server's own words name them (``The model `o3` does not exist``) and
    reached the parent model, the chat's answer and the webhook caller, whom a route is to hide them from:
    there they read as the route's name. Unrouted entries (``route`` None) are left as they are."""
    if route is None:
        return item
    model = item.get("model")
    names = {n for n in (model, model.rpartition("/")[2] if isinstance(model, str) else None, provider)
             if isinstance(n, str) and n.strip() and n != route}
    error = item.get("error")
    if names and isinstance(error, str):
        # Longest first: a name inside another (``gpt-4o`` in ``openai/gpt-4o``) goes with it. Whole names only:
        # ``gpt-4o`` is not cut out of ``gpt-4o-mini``, nor ``o3`` out of a word.
        alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        item["error"] = re.sub(rf"(?<![\w.-])(?:{alternatives})(?![\w-]|\.\w)", lambda _: route, error,
                               flags=re.IGNORECASE)
    return with_route(item, route)


def entry_from_result(task_index: int, subagent_id: str, result: SubagentResult) -> dict[str, Any]:
    """`entry` for a child only the journal remembers (its process has restarted): the same
    fields, those the journal does not keep (tool trace, timeout details) empty."""
    status = _STATUS.get(result.state, (result.error_classification or "error").lower())
    usage = result.usage
    item: dict[str, Any] = {
        "task_index": task_index,
        "subagent_id": subagent_id,
        "status": status,
        "summary": _recorded_summary(result),
        "error": _bounded_error(result.error_message, result.error_original_length),
        "exit_reason": result.exit_reason,
        "truncated": result.exit_reason == "max_iterations",
        "api_calls": usage.api_calls,
        "duration_seconds": round(result.duration_seconds or 0.0, 3),
        "model": result.handle.model,
        "tokens": {"input": usage.prompt_tokens, "output": usage.completion_tokens},
        "cost_usd": None if usage.cost_usd is None else round(usage.cost_usd, 6),
        "tool_trace": [],
    }
    for name in _TIMEOUT_FIELDS:
        item[name] = None
    return item


def _bounded_error(error: str | None, length: int | None = None) -> str | None:
    """``error`` cut to `MAX_ERROR_CHARS`, saying how many characters it leaves out; ``length``: the error's
    own length when ``error`` is only its start (the journal keeps the first `MAX_RESULT_CHARS`)."""
    length = len(error or "") if length is None else length
    if error is None or length <= MAX_ERROR_CHARS:
        return error
    return _cut_error(error, length, MAX_ERROR_CHARS)


def _cut_error(shown: str, length: int, keep: int) -> str:
    """``shown``, the start of an error of ``length`` characters, cut to at most ``keep``, then a note of how
    many it leaves out."""
    # At a space where one is near: a model name cut in two would be a stub `routed` no longer knows for one,
    # and shows (a name is one word, so it is kept whole or left out).
    cut = shown.rfind(" ", keep // 2, keep + 1)
    cut = keep if cut < 0 else cut
    return f"{shown[:cut]}{_ERROR_NOTE.format(length - cut)}"


_ERROR_NOTE = " [... {:,} more characters of the error not shown]"
_NOTED = re.compile(r" \[\.\.\. ([\d,]+) more characters of the error not shown\]\Z")


def share_error(item: dict[str, Any], limit: int) -> dict[str, Any]:
    """Cut ``item``'s ``error`` further, to at most ``limit`` characters with its note, when a batch's entries
    share a total: cut from the text the entry shows (`routed` has renamed in it what it hides), its note
    counting what the first cut (`MAX_ERROR_CHARS`) left out too."""
    error = item.get("error")
    if not isinstance(error, str) or len(error) <= limit:
        return item
    noted = _NOTED.search(error)
    shown, more = (error[:noted.start()], int(noted[1].replace(",", ""))) if noted else (error, 0)
    length = len(shown) + more
    # Room for the longest note it may take: the count can only be less than ``length``.
    item["error"] = _cut_error(shown, length, max(1, limit - len(_ERROR_NOTE.format(length))))
    return item


def _recorded_summary(result: SubagentResult) -> str | None:
    """The journaled summary, saying so when the journal kept only its start (`MAX_RESULT_CHARS`): else the
    parent took those characters for the whole answer, and the summary budget's marker called what it
    saves of them the full text."""
    summary = result.summary
    if summary is None or not result.summary_truncated or result.summary_original_length is None:
        return summary
    return (f"{summary}\n\n[... the rest of this answer, {result.summary_original_length - len(summary):,} more "
            f"characters, was not kept: only its first {len(summary):,} characters were recorded]")


def unavailable_entry(task_index: int, subagent_id: str) -> dict[str, Any]:
    """`entry` for a child nothing remembers (swept, or never journaled): an ``error`` with every
    field a parent reads from an entry, each empty, so that one of them missing never breaks it."""
    item: dict[str, Any] = {
        "task_index": task_index,
        "subagent_id": subagent_id,
        "role": None,
        "status": "error",
        "summary": None,
        "error": "the subagent's result is no longer available",
        "exit_reason": None,
        "truncated": False,
        "api_calls": 0,
        "duration_seconds": 0.0,
        "model": None,
        "tokens": {"input": 0, "output": 0},
        "cost_usd": None,
        "tool_trace": [],
    }
    for name in _TIMEOUT_FIELDS:
        item[name] = None
    return item


def apply_summary_budget(item: dict[str, Any], max_chars: int, workspace: Path, folder: str | None = None, *,
                         shared: bool = False) -> dict[str, Any]:
    """Cut an over-long summary to head and tail with an explicit marker, keeping the
    full text in the workspace where ``read_file`` can read it back: under ``folder``
    (workspace-relative), the parent session's own (its `FileScope`'s ``own``) where it has
    one, since the workspace may be shared with sessions that must not read it (other chats).
    ``shared``: ``max_chars`` is the summary's share of a total its batch's entries share, not
    ``delegation.max_summary_chars``, and ``summary_not_saved`` names it so."""
    summary = item.get("summary")
    if not isinstance(summary, str) or len(summary) <= max_chars:
        return item
    relative = Path(folder or "") / SPILL_DIR / f"{item['subagent_id']}.md"
    unsaved = _spill(workspace, relative, summary)
    if unsaved is not None:
        # Cut, the rest was nowhere: the parent would read an answer it can never have whole. Over the
        # budget, it costs the parent's context what the child wrote, which compaction can still take back.
        item["summary_truncated"] = False
        item["summary_original_chars"] = len(summary)
        item["summary_full_path"] = None
        limit = (f"its share of the results' total ({max_chars:,} characters)" if shared
                 else f"delegation.max_summary_chars ({max_chars})")
        item["summary_not_saved"] = f"given whole, over {limit}: {unsaved}"
        return item
    marker, keep = _marker(len(summary), max_chars, f"full text: read_file path={relative}")
    head = keep * 3 // 4
    tail = keep - head
    item["summary"] = summary[:head] + marker + (summary[-tail:] if tail else "")
    item["summary_truncated"] = True
    item["summary_original_chars"] = len(summary)
    item["summary_full_path"] = str(relative)
    return item


def _marker(length: int, max_chars: int, where: str) -> tuple[str, int]:
    """The marker and how many characters it leaves of the summary, with the count it names the true
    one: the marker takes room from the summary, as much more as its number has digits."""
    omitted = length - max_chars  # too few: the marker's own length is left out, grown into below
    while True:
        marker = f"\n\n[... {omitted} characters omitted; {where} ...]\n\n"
        keep = max(0, max_chars - len(marker))
        if length - keep == omitted:  # reached in a step or two: the count only grows, by its digits
            return marker, keep
        omitted = length - keep


def _spill(workspace: Path, relative: Path, text: str) -> str | None:
    """Save ``text`` whole as ``relative`` in ``workspace`` (0600, the folders it makes 0700: a chat's
    answer is the chat's, as its attachments are); None once saved, else why not, for the parent model
    (no host path in it; the log has it).

    Refused when a folder on the way is a symlink (a chat's own folder made a link to another chat's
    with ``execute_code``, or ``.switchboard`` a link out of the workspace): followed, this chat's answer
    landed in the other chat's folder, for its model to read, or outside the workspace. One put there
    after the look is not followed either: the folders are opened (and made) one at a time, following
    no symlink, and the file written by name in the last (`open_directory`). Written whole
    (`write_whole`): a crash midway left a half answer under the name the marker gives the model."""
    root = workspace.resolve()
    path = Path(os.path.normpath(root / relative))
    try:
        if path.parent.resolve() != path.parent:  # checked before anything is made through the link
            raise _Linked
        folder = open_directory(path.parent, make_folders=True, mode=0o700)
        try:
            write_whole(path.name, text.encode("utf-8", errors="surrogatepass"),
                        temporary=f".{path.name}.{secrets.token_hex(4)}.tmp", mode=0o600, folder=folder)
        finally:
            os.close(folder)
    except _Linked:
        return _linked(path, relative)
    except OSError as exc:
        if is_swapped(exc):  # ELOOP: a link put in place since the look
            return _linked(path, relative)
        log.warning("could not save a full child summary to %s: %s", path, exc)
        return f"it could not be saved ({exc.strerror or type(exc).__name__})"
    return None


class _Linked(Exception):
    pass


def _linked(path: Path, relative: Path) -> str:
    log.warning("a subagent's answer is not saved to %s: a folder on its way is a symlink, and an answer"
                " is saved only in a folder of the session's own", path)
    return f"{relative.parent}/ (or a folder on its way) is a symlink, and it is saved only in a folder of its own"
