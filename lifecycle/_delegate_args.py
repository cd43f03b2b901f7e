"""delegate_task's arguments: the schema the model sees and the checks that turn bad
calls into tool errors saying exactly what to do (never a silent truncation)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent import ToolError
from agent.images import images_problem, workspace_images_problem
from agent.tools.file_scope import FileScope
from lifecycle._children import ChildSpec
from lifecycle._contract import MAX_CONTEXT_CHARS, MAX_GOAL_CHARS
from lifecycle._output_schema import coerce_schema
from lifecycle._routing import ECHO_CHARS, RouteOption, clipped, listed_names

ROLES = ("leaf", "orchestrator")

_TASK = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "maxLength": MAX_GOAL_CHARS, "description": "What the subagent must achieve."},
        "context": {"type": "string", "maxLength": MAX_CONTEXT_CHARS,
                    "description": "Everything it needs to know: it has no other memory."},
        "output_schema": {"type": "object", "description": "Optional JSON Schema its final answer must match."},
        "images": {"type": "array", "items": {"type": "string"}, "maxItems": 8,
                   "description": "Optional http(s) URLs, data: URLs or workspace paths (ones you may read_file, "
                                  "or files this chat sent) of images."},
    },
    "required": ["goal"],
}


def role_schema(max_spawn_depth: int) -> dict[str, Any]:
    if max_spawn_depth <= 1:
        limit = "Here subagents may not nest at all, so every subagent runs as a leaf."
    else:
        limit = (f"Subagents nest at most {max_spawn_depth} levels deep (a top-level agent's subagents are level 1);"
                 " an orchestrator at the deepest level runs as a leaf.")
    return {"type": "string", "enum": list(ROLES), "description": (
        "leaf (default): the subagent does the work itself. orchestrator: it may split the work further with its "
        f"own delegate_task. {limit}")}


def route_schema(options: Sequence[RouteOption]) -> dict[str, Any]:
    listed = "; ".join(f"{o.name}: {o.description}" for o in options)
    return {"type": "string", "enum": [o.name for o in options], "description": (
        f"Which kind of subagent runs the task. {listed}. Without a route the task uses the default subagent.")}


def tool_schema(*, background: bool, max_spawn_depth: int = 1, routes: Sequence[RouteOption] = (),
                max_tasks: int = 10) -> dict[str, Any]:
    """Inline sessions get no live-control parameters; background sessions do. ``role`` says
    how deep subagents may nest; ``route`` (names and descriptions only) appears when the
    session's delegation backend offers routes; ``tasks`` holds at most ``max_tasks``
    (``delegation.max_concurrent_children``). The limits are the ones `parse_tasks` enforces."""
    task = {**_TASK, "properties": {**_TASK["properties"], "role": role_schema(max_spawn_depth)}}
    if routes:
        task["properties"]["route"] = route_schema(routes)
    fields = "goal, context, role, route, output_schema, images" if routes else "goal, context, role, output_schema, images"
    properties: dict[str, Any] = {
        "goal": {**_TASK["properties"]["goal"], "description": "One task's goal (use `tasks` for several)."},
        "context": {**_TASK["properties"]["context"],
                    "description": "Background for the one task (each of `tasks` has its own)."},
        "role": {**role_schema(max_spawn_depth), "description": "The role of every task that names none. "
                 + role_schema(max_spawn_depth)["description"]},
        "output_schema": {"type": "object", "description": "JSON Schema the answer of the single task must match."},
        "images": _TASK["properties"]["images"],
        "tasks": {"description": f"Several tasks to run in parallel, at most {max_tasks}: a list of {{{fields}}}.",
                  "anyOf": [{"type": "array", "items": task, "minItems": 1, "maxItems": max_tasks},
                            {"type": "string"}]},
    }
    if routes:
        properties["route"] = {**route_schema(routes), "description": "The route of every task that names none. "
                               + route_schema(routes)["description"]}
    if background:
        properties["action"] = {"type": "string", "enum": ["delegate", "list", "steer", "stop"],
                                "description": "delegate (default); list running subagents; steer or stop one."}
        properties["subagent_id"] = {"type": "string", "description": "For steer and stop: which subagent."}
        properties["message"] = {"type": "string", "maxLength": MAX_GOAL_CHARS,
                                 "description": "For steer: the text to deliver to it."}
    return {"type": "object", "properties": properties}


_KNOWN = frozenset({"goal", "context", "output_schema", "images", "tasks", "action", "role", "route"})
"""A delegating call's arguments (``action`` only as ``delegate``: other actions are checked by `check_control`)."""
_CONTROL = {"list": (), "steer": ("subagent_id", "message"), "stop": ("subagent_id",)}
"""What each live-control action of a background tool takes besides ``action``."""
_TASK_KEYS = ("goal", "context", "role", "route", "output_schema", "images")
_SINGLE = ("goal", "context", "output_schema", "images")
"""The top-level arguments that describe the single task: with ``tasks`` each task has its own."""


def present(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` without the keys whose value is null: models send null for an optional argument
    they mean to leave out."""
    return {key: value for key, value in args.items() if value is not None}


def check_arguments(args: dict[str, Any], *, background: bool = False) -> None:
    """What the generic schema check would catch, in words for the model (the tool checks its
    own arguments: a batch's schema check cost a millisecond). ``args`` as `present` leaves them,
    of a call that delegates; ``background``: the tool also offers live control."""
    control = [key for key in ("subagent_id", "message") if key in args] if background else []
    if control:  # steering or stopping with `action` left out: never a launch the model did not ask for
        listed, many = " and ".join(f"`{key}`" for key in control), len(control) > 1
        raise ToolError(f"{listed} {'are' if many else 'is'} only for action=steer or action=stop; set `action` to "
                        f"steer or stop a subagent, or leave {'them' if many else 'it'} out to start subagents")
    unknown = sorted(set(args) - _KNOWN)
    if unknown:
        raise ToolError(
            f"unknown argument(s) {listed_names(unknown)}; use goal/context for one task or tasks for several")
    for key in ("goal", "context"):
        if key in args and not isinstance(args[key], str):
            raise ToolError(f"`{key}` must be a string")
    _check_role("", args.get("role"))
    _check_route("", args.get("route"))


def check_control(action: str, args: dict[str, Any]) -> None:
    """Refuse what a live-control ``action`` (list, steer, stop) would silently ignore: a goal or
    tasks (nothing would start), a message for a stop (nothing would deliver it)."""
    takes = _CONTROL[action]
    extra = sorted(set(args) - {"action", *takes})
    if extra:
        wanted = " and ".join(f"`{key}`" for key in takes) if takes else "no other argument"
        raise ToolError(f"action={action} takes {wanted}, not {listed_names(extra)}; to start subagents, call "
                        "delegate_task without `action`")


def _check_role(where: str, role: Any) -> None:
    if role is not None and role not in ROLES:
        raise ToolError(f"{where}`role` must be \"leaf\" or \"orchestrator\", got {_as_json(role)}")


def _as_json(value: Any) -> str:
    """A model-written value as JSON, `clipped`: a string is cut before it is quoted, so it still reads as one."""
    if isinstance(value, str):
        return json.dumps(clipped(value), ensure_ascii=False)
    try:
        return clipped(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):  # nested as deep as the parser allowed, the encoder may give up
        return type(value).__name__


def _check_route(where: str, route: Any) -> None:
    # An unknown name is refused per task (the batch still runs); a non-string is a malformed call.
    if route is not None and not isinstance(route, str):
        raise ToolError(f"{where}`route` must be the name of a route, as a string")


def parse_tasks(args: dict[str, Any], limit: int) -> list[ChildSpec]:
    """The tasks of a call (``args`` as `present` leaves them), validated, in the order given;
    raises ToolError otherwise."""
    tasks = args.get("tasks")
    alone = [key for key in _SINGLE if key in args]
    if tasks is not None and alone:  # else silently dropped: a goal never run, a context never read
        names = [f"`{key}`" for key in alone]
        listed = f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
        raise ToolError(f"{listed} cannot be given next to `tasks`: put {'them' if len(alone) > 1 else 'it'} "
                        "inside each task instead.")
    if isinstance(tasks, str):
        try:
            tasks = json.loads(tasks)
        except json.JSONDecodeError as exc:
            raise ToolError(f"`tasks` is a string but not valid JSON ({exc.msg}); pass a list of task objects") from None
        except RecursionError:  # json's own depth limit: the model must hear it, not a crash
            raise ToolError(
                "`tasks` is a string but not valid JSON (nested too deeply); pass a list of task objects") from None
    if tasks is None:
        if "goal" not in args:
            raise ToolError("Provide either `goal` (with optional `context`) for one task, or `tasks`: "
                            "a list of {goal, context} objects.")
        tasks = [{k: args[k] for k in _SINGLE if k in args}]
    if not isinstance(tasks, list) or not tasks:
        raise ToolError("`tasks` must be a non-empty list of {goal, context} objects.")
    if len(tasks) > limit:  # before looking at each task: the fix is the same whatever they hold
        raise ToolError(
            f"Too many tasks: got {len(tasks)}, but at most {limit} run at once "
            f"(delegation.max_concurrent_children). Split the work into batches of at most {limit} "
            "tasks and call delegate_task once per batch."
        )
    defaults = {"role": args.get("role"), "route": args.get("route")}
    return [_spec(i, task, defaults) for i, task in enumerate(tasks)]


def _spec(index: int, task: Any, defaults: dict[str, Any]) -> ChildSpec:
    where = f"task {index}"
    if not isinstance(task, dict):
        raise ToolError(f"{where} must be an object like {{\"goal\": \"...\", \"context\": \"...\"}}, "
                        f"got {type(task).__name__}.")
    task = present(task)
    unknown = sorted(set(task) - set(_TASK_KEYS))
    if unknown:
        raise ToolError(
            f"{where}: unknown argument(s) {listed_names(unknown)}; a task takes {', '.join(_TASK_KEYS)}")
    goal = task.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise ToolError(f"{where}: `goal` must be a non-empty string saying what the subagent must achieve.")
    if len(goal) > MAX_GOAL_CHARS:
        raise ToolError(f"{where}: `goal` is {len(goal)} characters; at most {MAX_GOAL_CHARS}. Move detail to `context`.")
    context = task.get("context")
    if context is not None and (not isinstance(context, str) or len(context) > MAX_CONTEXT_CHARS):
        raise ToolError(f"{where}: `context` must be a string of at most {MAX_CONTEXT_CHARS} characters.")
    schema = task.get("output_schema")
    if schema is not None:
        try:
            schema = coerce_schema(schema)
        except ValueError as exc:
            raise ToolError(f"{where}: {exc}") from None
    images = task.get("images")
    problem = images_problem(images)
    if problem:  # it quotes a blank entry whole: cut, as the other echoes are
        raise ToolError(f"{where}: {clipped(problem, 4 * ECHO_CHARS)}")
    role, route = task.get("role"), task.get("route")
    _check_role(f"{where}: ", role)
    _check_route(f"{where}: ", route)
    return ChildSpec(goal=goal, context=context or None, role=role or defaults["role"] or "leaf", output_schema=schema,
                     images=tuple(images or ()), task_index=index, route=route or defaults["route"])


def check_workspace_images(specs: Sequence[ChildSpec], workspace: Path, scope: FileScope | None) -> None:
    """For a parent without ``read_file``: raise ToolError naming the first task's image it may not show a
    subagent (`workspace_images_problem`), before any child starts. Blocking file I/O."""
    for spec in specs:
        problem = workspace_images_problem(spec.images, workspace, scope) if spec.images else None
        if problem:
            raise ToolError(f"No subagent was started: task {spec.task_index}: {problem}.")
