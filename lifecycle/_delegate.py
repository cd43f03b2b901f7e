"""The ``delegate_task`` tool: hand one task or a batch to children, inline or in the background.

Inline, the call waits and returns every result, in task order. Background, it
returns a dispatch handle at once and hands the host a `BackgroundDispatch`
through ``on_dispatch``, which delivers the results once the children finish
(`HostView.finished_entries`); it then also offers ``action`` = list / steer /
stop. Each tool delegates through one delegation backend (`lifecycle.Routing`):
every task's ``route`` is resolved before any child starts. Build it with
`delegate_tool`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from agent import Tool, ToolContext, ToolError, new_id
from agent.tools.file_scope import SERVICE as FILE_SCOPE
from lifecycle._children import ChildSpec
from lifecycle._contract import MAX_GOAL_CHARS
from lifecycle._database import cannot_write
from lifecycle._delegate_args import (
    check_arguments,
    check_control,
    check_workspace_images,
    parse_tasks,
    present,
    tool_schema,
)
from lifecycle._dispatch import BackgroundDispatch, DispatchedTask
from lifecycle._entries import apply_summary_budget, entry, routed
from lifecycle._journal import JournalError
from lifecycle._record import Record
from lifecycle._routing import (
    DEFAULT_BACKEND,
    BackendUnavailable,
    ChildRoute,
    RouteRefused,
    clipped,
    echoed,
    refusal_entry,
)
from lifecycle._service import AsyncSubagentLifecycle
from lifecycle._snapshot import ChildSnapshot

log = logging.getLogger("lifecycle.delegate")

Mode = Literal["inline", "background"]
OnDispatch = Callable[[BackgroundDispatch], Callable[[bool], None] | None]
Admit = Callable[[str], str | None]

DESCRIPTION = (
    "Hand work to subagents. Each subagent starts with an empty memory: it knows only the goal and "
    "context you give it, so include everything it needs. Give `goal` (and `context`) for one task, or "
    "`tasks` for several that run in parallel. A task may carry an `output_schema` (JSON Schema) its answer "
    "must match, up to 8 `images`, and a `role` (orchestrator: it may delegate further)."
)
BACKGROUND_NOTE = (
    "The subagents are working in the background. End your turn now with a brief acknowledgement to the "
    "user. Their results will arrive as a new message after your turn has ended; do not poll, wait, or "
    "call delegate_task to check on them."
)

NOT_RECORDED = (
    "No subagent was started: the state database cannot be written right now, so the launch could not be "
    "recorded, and nothing of it runs. Tell the user the task could not be started and to ask again later; "
    "whoever runs me is told why in the logs."
)

MAX_STEER_CHARS = MAX_GOAL_CHARS
"""The longest steer message: what `AsyncSubagentLifecycle.steer` takes, and as long as a goal may be."""

CLOSED_WHILE_WAITING = (
    "No results: the lifecycle service closed before the subagents ended (the process is shutting down); "
    "the next start stops them. Nothing more can be done in this turn."
)


def delegate_tool(service: AsyncSubagentLifecycle, *, mode: Mode = "inline", on_dispatch: OnDispatch | None = None,
                  backend: str = DEFAULT_BACKEND, admit: Admit | None = None) -> Tool:
    """The ``delegate_task`` tool on ``service`` for one delegation mode and backend.

    ``inline``: a call waits for its children and returns every result; interrupting
    the calling turn interrupts them. ``background``: a call launches the children,
    journals them, calls ``on_dispatch(dispatch)`` once, and returns a dispatch handle; the
    host delivers the results later. ``on_dispatch`` is called synchronously between the
    children's PENDING rows being put and their commit: what the host writes then to the
    journal's `SqliteDatabase` commits with them, in one transaction, before the model can
    acknowledge anything. It may return ``launched(ok)``, called once the commit's outcome
    is known: ``True``, the children run (deliver their results); ``False``, nothing of the
    launch was recorded and none of them runs (forget the record: a full disk rolled it
    back with them, to be written again later, or the caller was cancelled). If
    ``on_dispatch`` raises, the children are interrupted once committed and the call fails.
    Raises ValueError for background without ``on_dispatch``.

    ``backend`` names the delegation backend (``service.host.routing``) whose options
    the schema offers as each task's ``route``; its options are read now. If the backend
    is gone when the tool is called, the call fails and no child starts; a task whose
    route does not resolve gets an ``error`` entry with ``route.refused`` while the rest
    run. ``admit(parent_session_id)`` is asked before a background call launches
    anything: it may raise `agent.ToolError` to refuse the call, or return a note for
    the model; SQLite's error for a state database that cannot be written (what a read
    raises while a full disk keeps a lost batch out) fails the call as a launch the
    journal refused does (`NOT_RECORDED`).
    """
    return DelegateTool(service, mode=mode, on_dispatch=on_dispatch, backend=backend, admit=admit).tool()


class DelegateTool:
    """The ``delegate_task`` handler for one mode and backend; the registry holds the inline default one."""

    def __init__(self, service: AsyncSubagentLifecycle, *, mode: Mode = "inline",
                 on_dispatch: OnDispatch | None = None, backend: str = DEFAULT_BACKEND,
                 admit: Admit | None = None) -> None:
        if mode == "background" and on_dispatch is None:
            raise ValueError("background delegation needs an on_dispatch callback")
        self.service = service
        self.mode = mode
        self.on_dispatch = on_dispatch
        self.backend = backend
        self.admit = admit

    def tool(self) -> Tool:
        host = self.service.host
        try:
            routes = host.routing.options(self.backend)
        except BackendUnavailable:
            # Gone: a call fails with the reason; failing: its routed tasks are refused. No routes meanwhile.
            routes = ()
        schema = tool_schema(background=self.mode == "background", max_spawn_depth=host.delegation.max_spawn_depth,
                             routes=routes, max_tasks=host.delegation.max_concurrent_children)
        return Tool("delegate_task", DESCRIPTION, schema, self.__call__, "delegation", checks_own_arguments=True)

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        parent = ctx.session
        args = present(args)
        action = args.get("action", "delegate")
        if action != "delegate":
            return await self._control(action, args, parent.session_id)
        check_arguments(args, background=self.mode == "background")
        limit = self.service.host.delegation.max_concurrent_children
        specs = parse_tasks(args, limit)
        if "read_file" not in parent.tools and any(spec.images for spec in specs):
            # What the parent could not read itself, a subagent's vision model must not be shown either.
            await asyncio.to_thread(check_workspace_images, specs, parent.workspace, parent.services.get(FILE_SCOPE))
        specs, routes, refused = self._route(specs)
        note = None
        if self.mode == "background" and specs and self.admit is not None:
            try:
                note = self.admit(parent.session_id)
            except sqlite3.Error as exc:
                if not cannot_write(exc):
                    raise
                # Refused, not let through unchecked: the host's check reads the state database the
                # launch must be committed to next, and one it cannot read for want of room cannot
                # record the launch either; passing would also lift the host's limit meanwhile.
                raise ToolError(NOT_RECORDED) from None
        started = time.monotonic()
        if not specs:  # every task was refused: nothing to start or to deliver later
            return {"results": refused, "total_duration_seconds": 0.0}
        if self.mode == "background":
            return await self._dispatch(parent, ctx.turn_id, specs, routes, refused, note)
        # Inline, nothing is handed out before the children end, and their terminal rows commit
        # after their PENDING ones: no need to wait for a commit before they start.
        try:
            records = await self.service._supervisor.submit(parent, ctx.turn_id, specs, durable=False, routes=routes)
        except JournalError:  # logged by the journal and its database, with the file and the cause
            raise ToolError(NOT_RECORDED) from None
        return await self._inline(parent, specs, records, started, refused)

    def _route(self, specs: list[ChildSpec]) -> tuple[list[ChildSpec], list[ChildRoute | None], list[dict]]:
        """Resolve every task's route before anything starts: the tasks that may run (tagged with
        the backend), their routes, and entries for the refused ones."""
        host = self.service.host
        if not host.routing.available(self.backend):
            raise ToolError(
                f"No subagent was started: this chat's delegation backend {self.backend!r} is not available "
                "(its plugin is not loaded). Tell the user: /delegation shows the backends and switches to another."
            )
        backend = None if self.backend == DEFAULT_BACKEND else self.backend
        known = host.tools.toolsets()
        kept, routes, refused = [], [], []
        for spec in specs:
            spec = dataclasses.replace(spec, backend=backend)
            try:
                route = None if spec.route is None else host.routing.resolve(self.backend, spec.route, known)
            except RouteRefused as exc:
                refused.append(refusal_entry(spec.task_index, spec.route, str(exc)))
                continue
            except BackendUnavailable as exc:  # gone between the check and now: still nothing started
                raise ToolError(f"No subagent was started: {exc}.") from None
            kept.append(spec)
            routes.append(route)
        return kept, routes, refused

    async def _inline(self, parent: Any, specs: list[ChildSpec], records: list[Record], started: float,
                      refused: list[dict]) -> dict:
        supervisor = self.service._supervisor

        def pass_interrupt(reason: str, hard: bool) -> None:
            # Held until it ends, its failure logged, and waited for by the close (`Supervisor._carry_on`): the
            # loop holds tasks weakly, and a listener cannot await.
            supervisor._carry_on(asyncio.ensure_future(supervisor.interrupt(records, f"parent interrupted: {reason}")))

        # A parent that is itself a child holding an engine slot lends it to its children while
        # it waits: were it to hold it, orchestrators filling every slot would wait for ever.
        engine = supervisor.engine
        lend = getattr(engine, "lend_slot", None)
        lent = lend is not None and lend(parent.session_id)
        parent.interrupt_listeners.append(pass_interrupt)
        try:
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(r.waiter(loop) for r in records))
        except BaseException:
            if lent:  # stopped: it only winds down, and needs no wait for a slot to do it
                engine.reclaim_slot_nowait(parent.session_id)
            raise
        finally:
            parent.interrupt_listeners.remove(pass_interrupt)
        if supervisor.sealed and any(r.result is None for r in records):
            # Woken by the close (`Supervisor.end_waits`): nothing will tell this process how they end.
            if lent:
                engine.reclaim_slot_nowait(parent.session_id)
            raise ToolError(CLOSED_WHILE_WAITING)
        if lent:
            await engine.reclaim_slot(parent.session_id)
        scope = parent.services.get(FILE_SCOPE)
        return await self._payload(parent.workspace, scope.own if scope is not None else None, specs, records,
                                   started, refused)

    async def _payload(self, workspace: Any, folder: str | None, specs: list[ChildSpec], records: list[Record],
                       started: float, refused: list[dict]) -> dict:
        max_chars = self.service.host.delegation.max_summary_chars
        results = list(refused)
        for spec, record in zip(specs, records, strict=True):
            item = entry(spec.task_index, record.handle.subagent_id, record.outcome)
            item["role"] = record.handle.role
            routed(item, spec.route, record.handle.provider)
            if len(item.get("summary") or "") > max_chars:
                item = await asyncio.to_thread(apply_summary_budget, item, max_chars, workspace, folder)
            results.append(item)
        results.sort(key=lambda item: item["task_index"])
        return {"results": results, "total_duration_seconds": round(time.monotonic() - started, 3)}

    # -- background --------------------------------------------------------------------

    async def _dispatch(self, parent: Any, turn_id: str, specs: list[ChildSpec], routes: list[ChildRoute | None],
                        refused: list[dict], note: str | None) -> dict:
        """Launch the children and hand the host their dispatch in the same commit as their PENDING rows
        (`Supervisor.submit`'s ``before_commit``): recorded in a later commit, a crash or a full disk between
        the two left children running, and relaunched or reported at the next start, whose results nothing
        delivered to the chat."""
        dispatch: BackgroundDispatch | None = None
        launched: Callable[[bool], None] | None = None
        failure: Exception | None = None

        def record(records: Sequence[Record]) -> None:
            nonlocal dispatch, launched, failure
            dispatch = BackgroundDispatch(
                delegation_id=new_id("deleg_"), parent_session_id=parent.session_id, parent_turn_id=turn_id,
                dispatched_at=self.service.clock.time(),
                tasks=tuple(DispatchedTask(r.handle.subagent_id, spec) for spec, r in zip(specs, records, strict=True)),
            )
            try:
                launched = self.on_dispatch(dispatch)
            except Exception as exc:  # `submit` must not be interrupted between its puts and their commit
                failure = exc

        try:
            records = await self.service._supervisor.submit(parent, turn_id, specs, durable=True, routes=routes,
                                                            before_commit=record)
        except BaseException as exc:
            if launched is not None:  # the host forgets its record: none of the children it names runs
                try:
                    launched(False)
                except Exception:
                    log.exception("the host failed to forget background delegation %s", dispatch.delegation_id)
            if isinstance(exc, JournalError):  # logged by the journal and its database, with the file and the cause
                raise ToolError(NOT_RECORDED) from None
            raise
        if failure is not None:
            full = cannot_write(failure)
            if full:  # the operator's cause in one line, as for a launch the journal refused
                log.error("background delegation %s could not be recorded, so its subagents are stopped: the state "
                          "database cannot be written (%s)", dispatch.delegation_id, failure)
            else:
                log.error("the host could not record background delegation %s", dispatch.delegation_id,
                          exc_info=failure)
            await self.service._supervisor.interrupt(records, "the delegation could not be recorded")
            # A full disk is not cured by trying again at once: the model is told what NOT_RECORDED says
            # (tell the user, ask later), not to retry, which launched and stopped children again and again.
            raise ToolError(NOT_RECORDED if full else "the subagents could not be started; try again") from None
        if launched is not None:
            launched(True)
        payload = {
            "status": "dispatched",
            "mode": "background",
            "delegation_id": dispatch.delegation_id,
            "count": len(specs),
            "goals": [clipped(s.goal, LISTED_GOAL_CHARS) for s in specs],
            "subagent_ids": [r.handle.subagent_id for r in records],
            "note": BACKGROUND_NOTE,
        }
        if any(len(s.goal) > LISTED_GOAL_CHARS for s in specs):  # said, so the model does not think it cut them
            payload["goals_cut"] = (f"a goal over {LISTED_GOAL_CHARS} characters is shown here as its first "
                                    f"{LISTED_GOAL_CHARS - 1} and …; each subagent has its goal whole")
        if refused:
            payload["refused"] = refused
        if note:
            payload["backlog"] = note
        return payload

    async def _control(self, action: Any, args: dict[str, Any], parent_id: str) -> dict[str, Any]:
        if self.mode != "background":
            raise ToolError(f"action {echoed(action)} is only available for background delegation")
        if action not in ("list", "steer", "stop"):
            raise ToolError(f"action must be one of delegate, list, steer, stop; got {echoed(action)}")
        check_control(action, args)
        supervisor = self.service._supervisor
        if action == "list":
            now = self.service.clock.time()  # the clock that stamped started_at
            children = self.service.host_view().children(parent_id)
            listed = {"subagents": [_listing(child, now) for child in children[-LISTED_CHILDREN:]]}
            if len(children) > LISTED_CHILDREN:
                listed["not_listed"] = (f"{len(children) - LISTED_CHILDREN} older subagents are not listed, only the "
                                        f"latest {LISTED_CHILDREN} (the dispatch results name them all)")
            return listed
        if "subagent_id" not in args:  # else "no running subagent None", as if the child had gone
            raise ToolError(f"action={action} needs `subagent_id`: which subagent (action=list shows them)")
        if action == "steer":
            message = args.get("message")
            if not isinstance(message, str) or not message.strip():
                raise ToolError("steer needs a non-empty `message`")
            if len(message) > MAX_STEER_CHARS:
                # The service's own steer refuses it too: here it went to the engine unchecked, and a
                # megabyte steered in filled the child's context window from its next step on.
                raise ToolError(f"steer's `message` is {len(message):,} characters; at most {MAX_STEER_CHARS:,}. "
                                "Send the gist; a subagent cannot be given more than that at once")
        record = self._own_child(args.get("subagent_id"), parent_id)
        sid = record.handle.subagent_id
        if action == "steer":
            # Still RUNNING while it winds down: the engine would take the text, or call the child not running yet.
            if record.stop_request is not None or not record.live:
                ended = "is being stopped" if record.stop_request is not None else "has finished"
                raise ToolError(f"subagent {sid} {ended} and reads no more messages; its result still arrives as a "
                                "message")
            if not supervisor.engine.steer(sid, message):
                raise ToolError(f"subagent {sid} is not running yet; steer it once it runs")
            return {"status": "queued", "subagent_id": sid,
                    "note": "Delivered at the subagent's next step; its result still arrives as a message."}
        # Asked before the answer, not on a later turn of the loop: a steer the model sent with the stop
        # would be queued for a child that reads no more messages.
        await supervisor.interrupt([record], "stopped by the parent")
        return {"status": "stopping", "subagent_id": sid,
                "note": "The subagent stops at its next step; its partial result still arrives as a message."}

    def _own_child(self, subagent_id: Any, parent_id: str) -> Record:
        for record in self.service._supervisor.children(parent_id):
            if record.handle.subagent_id == subagent_id:
                return record
        raise ToolError(f"no running subagent {echoed(subagent_id)} in this session; use action=list to see them")


LISTED_GOAL_CHARS = 200
"""How much of each child's goal ``action=list`` and the dispatch result show: enough to tell the children apart.
The result stays in the conversation the model reads again at every request, and a goal may be 16,000
characters: ten children listed whole were 160,000 characters, paid for at each step, until a compaction."""
LISTED_CHILDREN = 20
"""The most children ``action=list`` shows, the latest launched; the others are counted (``not_listed``): a session
may have many delegations running, each of up to ``delegation.max_concurrent_children``."""


def _listing(child: ChildSnapshot, now: float) -> dict[str, Any]:
    listed = {
        "subagent_id": child.subagent_id,
        "goal": clipped(child.goal, LISTED_GOAL_CHARS),
        "state": child.state.value,
        "running_seconds": round(now - child.started_at, 1) if child.started_at else 0.0,
        "last_activity": child.activity,
    }
    if len(child.goal) > LISTED_GOAL_CHARS:  # said, so the model does not take the excerpt for the task
        listed["goal_cut"] = (f"only the first {LISTED_GOAL_CHARS - 1} of its {len(child.goal):,} characters;"
                              " the subagent has it whole")
    return listed
