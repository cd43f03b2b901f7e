"""Output contracts for children: a task's JSON Schema, told to the child and checked on its answer.

The flow the lead wires into ``delegate_task``: `coerce_schema` (or `schema_problem`)
before any child starts, `contract_prompt` in the child's system prompt,
`validate_output` on its final answer, at most one `correction_prompt` turn, and
`SCHEMA_NOTE` on an entry whose corrected answer still fails. Everything here is
pure: no I/O, no state, safe to call from the event loop.

Two things jsonschema would do on that loop are bounded here. A ``$ref`` to a URL is never
fetched (jsonschema's default fetches it, with no timeout: a request to wherever the model said,
and a loop stalled for as long as the server takes); it is an error of the contract instead. A
``pattern`` (and a ``patternProperties`` key) is matched with the ``regex`` module under a time
budget, `MAX_PATTERN_SECONDS` per validation (``regex`` may overrun a timeout by as long again),
not with ``re``, which has no timeout: one such as ``^(a|a)+$`` on forty characters held the loop
for hours. A value the budget did not suffice for is an error of the answer (it was not shown to
match), never taken as valid. A schema whose patterns could not be bounded so is refused up front
(`coerce_schema`). So is one whose ``$ref``s and ``allOf``/``anyOf``/… apply more than
`MAX_APPLICATIONS` subschemas to one value (thirty levels of ``allOf`` of two ``$ref``s to the level
below are 2**30 checks of it, from a 2 KB schema); what is left, subschemas applied again at each
level of a deeply nested answer, is bounded by `MAX_CHECK_SECONDS` per check, an error of the answer.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import re
import time
from collections.abc import Iterator
from functools import lru_cache
from re import _constants as _sre  # the stdlib's own parser, private: `_pattern_size` reads repeats with it
from re import _parser as _sre_parser
from typing import Any

import referencing
import referencing.exceptions
import referencing.jsonschema
import regex
from jsonschema import Draft202012Validator, SchemaError, ValidationError
from jsonschema.validators import extend, validator_for

#: Characters of a schema at most, as compact JSON: it is printed whole into the child's system prompt,
#: and checking one is slow (about 3 ms per thousand characters, on the event loop).
MAX_SCHEMA_CHARS = 32_000
#: Validation errors reported at most; more become one ``... and N more`` line.
MAX_ERRORS = 20
#: Characters per error line at most; longer lines end in an ellipsis.
MAX_ERROR_CHARS = 300
#: Seconds of pattern matching one `validate_output` may spend, at most, on the event loop.
MAX_PATTERN_SECONDS = 0.25
#: Seconds one `validate_output` may spend checking an answer, patterns included; past them it is an error.
MAX_CHECK_SECONDS = 0.5
#: Subschemas a schema may apply to one value, through ``$ref`` and the in-place keywords (`_IN_PLACE`).
MAX_APPLICATIONS = 5_000
#: How large a pattern may be with its repeats unrolled (``(a{100}){100}`` is 10,000): ``regex`` unrolls
#: them as it compiles, and ``((a{100}){100}){100}){100}`` took the process's memory until it was killed.
MAX_PATTERN_SIZE = 10_000
#: Note on an entry whose final text still failed its schema after the correction turn.
SCHEMA_NOTE = (
    "The child's final text did not match output_schema after one correction; it is returned "
    "unvalidated in summary. Extract what you need from it rather than re-running the task."
)

# An opening fence: ``` and an optional language tag alone on their line. (A JSON
# string cannot hold a raw newline, so this never matches inside one.)
_FENCE_OPEN = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Bounds the fence and prose scans: each failed start may re-read the rest of the text.
_MAX_SCAN_STARTS = 256


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are Python extensions, not JSON; a contract answer must be real JSON.
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _validator_class(schema: dict) -> type:
    # An unknown or non-string $schema gets Draft 2020-12 instead of jsonschema's
    # DeprecationWarning (an error under our warning filters); a non-string one is
    # then reported by the meta-schema itself.
    if isinstance(schema.get("$schema", ""), str):
        return validator_for(schema, default=Draft202012Validator)
    return Draft202012Validator


_NO_RETRIEVAL = referencing.Registry()
"""The registry `validate_output` resolves ``$ref`` in: the drafts' own meta-schemas and the schema itself, nothing
fetched (jsonschema's default registry fetches a URL with ``urlopen``, no timeout, on the loop)."""
_BUDGET: contextvars.ContextVar[float] = contextvars.ContextVar("output_schema_pattern_deadline")
"""The `time.monotonic` by which the running `validate_output` stops matching patterns."""
_CHECK_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("output_schema_check_deadline")
"""The `time.monotonic` by which the running `validate_output` gives up checking the answer."""


class _OutOfTime(Exception):
    """The answer's check took longer than `MAX_CHECK_SECONDS`."""


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return regex.compile(pattern, regex.VERSION0)  # VERSION0: ``re``'s syntax, as jsonschema's own check uses


def _search(pattern: str, text: str) -> bool | None:
    """Whether ``pattern`` is found in ``text`` (``re.search``, as JSON Schema means); None when
    the validation's time for patterns ran out first."""
    left = _BUDGET.get(time.monotonic() + MAX_PATTERN_SECONDS) - time.monotonic()
    if left <= 0:
        return None
    try:
        return _compiled(pattern).search(text, timeout=left) is not None
    except TimeoutError:
        # A match may overrun its timeout by as long again, longer on a loaded machine, past the whole check's
        # deadline: the check keeps its own share from here, and the answer is told which pattern ran out.
        _CHECK_DEADLINE.set(max(_CHECK_DEADLINE.get(0.0), time.monotonic() + MAX_CHECK_SECONDS - MAX_PATTERN_SECONDS))
        return None


def _too_slow(pattern: str, text: str) -> ValidationError:
    return ValidationError(f"{text!r} could not be checked against {pattern!r}: matching took longer than "
                           f"the {MAX_PATTERN_SECONDS} s an answer's patterns may take (the pattern backtracks)")


def _pattern(validator, pattern, instance, schema) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string"):
        found = _search(pattern, instance)
        if found is None:
            yield _too_slow(pattern, instance)
        elif not found:
            yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, patterns, instance, schema) -> Iterator[ValidationError]:
    if validator.is_type(instance, "object"):
        for pattern, subschema in patterns.items():
            for key, value in instance.items():
                found = _search(pattern, key)
                if found is None:
                    yield _too_slow(pattern, key)
                elif found:
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator, additional, instance, schema) -> Iterator[ValidationError]:
    """jsonschema's, with each ``patternProperties`` key matched by `_search` (a key none was
    shown to match in time is reported so, not taken as extra)."""
    if not validator.is_type(instance, "object"):
        return
    named, patterns, extras = schema.get("properties", {}), schema.get("patternProperties", {}), []
    for key in instance:
        if key in named:
            continue
        found = [_search(pattern, key) for pattern in patterns]
        if any(found):
            continue
        if None in found:
            yield _too_slow(next(p for p, f in zip(patterns, found) if f is None), key)
        else:
            extras.append(key)
    if validator.is_type(additional, "object"):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)
    elif not additional and extras:
        listed = ", ".join(repr(key) for key in sorted(extras))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{listed} {verb} not match any of the regexes: "
                                  + ", ".join(repr(p) for p in sorted(patterns)))
        else:
            yield ValidationError(f"Additional properties are not allowed ({listed} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")


_BOUNDED = {"pattern": _pattern, "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties}


def _timed(check: Any) -> Any:
    """A keyword's check that first makes sure the answer's check still has time (`MAX_CHECK_SECONDS`). It hands
    back what ``check`` returns rather than iterating it: a frame of its own at every level would leave a nested
    answer a third less depth before Python's recursion limit."""

    def timed(validator, value, instance, schema) -> Any:
        if time.monotonic() > _CHECK_DEADLINE.get(float("inf")):
            raise _OutOfTime
        return check(validator, value, instance, schema)

    return timed


@lru_cache(maxsize=None)
def _bounded_class(cls: type) -> type:
    """``cls`` with the keywords that match patterns matching them under `MAX_PATTERN_SECONDS`, and every
    keyword giving up once the check has taken `MAX_CHECK_SECONDS` (one class per draft: a handful)."""
    checks = {**cls.VALIDATORS, **{k: v for k, v in _BOUNDED.items() if k in cls.VALIDATORS}}
    return extend(cls, {k: _timed(v) for k, v in checks.items()})


_REPEATS = (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT)


def _pattern_size(items: Any) -> int:
    """The size of the parsed pattern ``items`` with each repeat counted as many times as it may
    repeat (an unbounded one by its minimum): a bound on what compiling it with ``regex`` unrolls."""
    size = 0
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            size += (high if high != _sre.MAXREPEAT else max(low, 1)) * max(_pattern_size(body), 1)
        elif op is _sre.SUBPATTERN:
            size += _pattern_size(arg[-1])
        elif op is _sre.BRANCH:
            size += sum(_pattern_size(branch) for branch in arg[1])
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            size += _pattern_size(arg[1])
        elif op is _sre.ATOMIC_GROUP:
            size += _pattern_size(arg)
        elif op is _sre.GROUPREF_EXISTS:
            size += sum(_pattern_size(branch) for branch in arg[1:] if branch is not None)
        else:
            size += 1
    return size


def _unusable(pattern: str) -> str | None:
    """Why ``pattern`` (one ``re`` compiles: the meta-schema checked that) cannot be matched under
    a time limit, if it cannot."""
    try:
        size = _pattern_size(_sre_parser.parse(pattern))
    except (re.error, RecursionError, OverflowError) as exc:
        return f"pattern {pattern!r} cannot be used: {exc}"
    if size > MAX_PATTERN_SIZE:
        return (f"pattern {pattern!r} is {size} characters long with its repeats unrolled; at most {MAX_PATTERN_SIZE} "
                "(limit a string's length with maxLength, not with a pattern)")
    try:
        _compiled(pattern)
    except (regex.error, RecursionError, OverflowError) as exc:
        return f"pattern {pattern!r} cannot be used: {exc}"
    return None


def _patterns_problem(schema: dict) -> str | None:
    """Why the patterns of ``schema`` cannot be matched under a time budget, if they cannot: one
    too large or that the ``regex`` module does not compile (`_unusable`), or ``patternProperties``
    beside ``unevaluatedProperties``, whose check (jsonschema's) matches them with ``re``, unbounded."""
    todo: list[Any] = [schema]
    keys: set[str] = set()
    while todo:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            keys.update(node)
            found = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
            if isinstance(node.get("patternProperties"), dict):
                found.extend(node["patternProperties"])
            for pattern in found:
                if (problem := _unusable(pattern)) is not None:
                    return problem
            todo.extend(node.values())
    if "patternProperties" in keys and "unevaluatedProperties" in keys:
        return ("patternProperties cannot be combined with unevaluatedProperties in an output contract (their "
                "patterns could not be matched under a time limit); use additionalProperties")
    return None


_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies")
"""The keywords that apply their subschemas to the very value their schema checks (the others, ``properties``,
``items``, …, to a part of it): a loop of these and ``$ref``s never reaches a smaller value, and never ends."""


def _references_problem(schema: dict) -> str | None:
    """Why the ``$ref``s of ``schema`` cannot be applied to any answer, if they cannot: one that resolves to nothing
    here (a URL, never fetched; a pointer to nowhere), or a loop of references that applies the schema to the same
    value again and again (``{"$ref": "#"}``), which jsonschema follows until Python's recursion limit. Either fails
    every answer, found only once the child has done its work and spent its one correction turn on it."""
    cls = _validator_class(schema)
    specification = referencing.jsonschema.specification_with(
        cls.ID_OF(cls.META_SCHEMA) or "urn:unknown-dialect", default=referencing.Specification.OPAQUE)
    root = cls(schema, registry=_NO_RETRIEVAL)._resolver  # private, as `_resolver` is what validation resolves with
    nodes: dict[int, tuple[dict, Any]] = {}
    """Each subschema, by id, and the resolver its ``$ref`` is resolved with, as jsonschema's ``descend`` makes it."""
    todo: list[tuple[Any, Any]] = [(schema, root)]
    while todo:
        node, resolver = todo.pop()
        if isinstance(node, dict) and id(node) not in nodes:
            resolver = resolver.in_subresource(specification.create_resource(node))
            nodes[id(node)] = node, resolver
            todo.extend((sub, resolver) for sub in specification.subresources_of(node))
    edges: dict[int, list[int]] = {}
    for key, (node, resolver) in nodes.items():
        targets = edges[key] = []
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = resolver.lookup(ref)
            except referencing.exceptions.Unresolvable as exc:
                shown = ref if len(ref) <= 80 else ref[:79] + "…"
                return f"$ref {shown!r} does not resolve ({type(exc).__name__}; a URL is never fetched)"
            targets.append(id(resolved.contents))
        for word in _IN_PLACE:
            value = node.get(word)
            subs = value if isinstance(value, list) else value.values() if word.startswith("depend") and isinstance(
                value, dict) else [value]
            targets.extend(id(sub) for sub in subs if isinstance(sub, dict))
    # A loop among them, by depth-first search (iterative: a schema may nest deeper than the recursion limit).
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in nodes:
        if start in state:
            continue
        state[start] = 1
        path = [(start, iter(edges[start]))]
        while path:
            key, following = path[-1]
            target = next(following, None)
            if target is None:
                state[key] = 2
                path.pop()
            elif target in edges and state.get(target) == 1:
                return "its $refs form a loop that applies the schema to the same value without end"
            elif target in edges and target not in state:
                state[target] = 1
                path.append((target, iter(edges[target])))
    return _applications_problem(edges)


def _applications_problem(edges: dict[int, list[int]]) -> str | None:
    """Why ``edges`` (loop-free: each subschema's in-place subschemas and ``$ref`` targets) apply too many
    subschemas to one value, if they do: each path counts, so a few levels that each name the one below
    twice multiply (thirty are 2**30 checks of one value, for hours on the event loop)."""
    counts: dict[int, int] = {}
    for start in edges:
        todo = [start]
        while todo:
            key = todo[-1]
            if key in counts:
                todo.pop()
                continue
            below = [t for t in edges[key] if t in edges and t not in counts]
            if below:
                todo.extend(below)
                continue
            todo.pop()
            counts[key] = min(1 + sum(counts.get(t, 1) for t in edges[key]), MAX_APPLICATIONS + 1)
            if counts[key] > MAX_APPLICATIONS:
                return (f"its $refs and allOf/anyOf/oneOf/… apply more than {MAX_APPLICATIONS:,} subschemas to one "
                        "value (each $ref to a subschema that refers on twice doubles them); name each once")
    return None


def coerce_schema(value: object) -> dict:
    """The schema ``value`` names, parsed from a JSON string if a model double-encoded it.

    Raises ValueError with a one-line, model-facing message when it is not a JSON
    object, not JSON-serialisable (NaN and Infinity included), longer than
    `MAX_SCHEMA_CHARS` as compact JSON, or not a valid JSON Schema. ``None`` (no
    contract) is for the caller to handle; here it is an error like any other non-object.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError("output_schema must be a JSON object (a JSON Schema), got a non-JSON string") from None
        except RecursionError:  # json's own depth limit; callers expect a ValueError naming the problem
            raise ValueError(
                "output_schema must be a JSON object (a JSON Schema), got a string nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ValueError(f"output_schema must be a JSON object (a JSON Schema), got {type(value).__name__}")
    try:  # the contract prompt has to print it, as JSON
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"output_schema must be plain JSON: {exc}") from None
    if size > MAX_SCHEMA_CHARS:  # before the meta-schema check, whose time grows with it
        raise ValueError(f"output_schema is {size} characters as JSON; at most {MAX_SCHEMA_CHARS}. Keep it to the "
                         "answer's shape and put explanations in `context`.")
    try:
        _validator_class(value).check_schema(value)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        message = _one_line(exc.message) + (f" (at {where})" if where else "")
        raise ValueError(f"output_schema is not a valid JSON Schema: {message}") from None
    except Exception as exc:  # RecursionError on absurd nesting, bad regexes, ...
        raise ValueError(f"output_schema could not be checked: {_one_line(str(exc))}") from None
    try:
        problem = _patterns_problem(value) or _references_problem(value)
    except Exception as exc:  # a schema the meta-schema let through but referencing cannot read
        raise ValueError(f"output_schema could not be checked: {_one_line(str(exc))}") from None
    if problem is not None:
        raise ValueError(f"output_schema is not usable: {_one_line(problem)}")
    return value


def schema_problem(schema: object) -> str | None:
    """None when `coerce_schema` accepts ``schema`` (a dict or a JSON string), else its message."""
    try:
        coerce_schema(schema)
    except ValueError as exc:
        return str(exc)
    return None


def contract_prompt(schema: dict) -> str:
    """The system-prompt section that makes ``schema`` the child's output contract."""
    return (
        "OUTPUT CONTRACT (machine-validated):\n"
        "Your final answer must be ONLY a single JSON value that matches the JSON Schema below: "
        "no prose before or after it, no code fence, no comments. "
        "It is parsed and validated automatically.\n"
        "JSON Schema:\n" + json.dumps(schema, indent=2, ensure_ascii=False)
    )


def _scan(text: str) -> tuple[object | None, str | None]:
    """The longest top-level JSON object or array in ``text``, scanning left to right."""
    best, best_len, first_error, starts, i = None, 0, None, 0, 0
    while starts < _MAX_SCAN_STARTS:
        i = min((j for j in (text.find("{", i), text.find("[", i)) if j >= 0), default=-1)
        if i < 0:
            break
        starts += 1
        try:
            value, end = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError) as exc:
            first_error = first_error or _one_line(str(exc))
            i += 1
            continue
        # Longest, not first: prose often holds citation-like "[1]" before the real answer.
        if end - i > best_len:
            best, best_len = value, end - i
        i = end
    if best_len:
        return best, None
    if first_error:
        return None, f"the answer contains no valid JSON object or array (first try: {first_error})"
    return None, "the answer contains no JSON object or array"


def extract_json(text: str) -> tuple[object | None, str | None]:
    """``(value, None)`` for the JSON value a final answer holds, or ``(None, problem)``.

    Tried in order: the whole text as JSON (any value, scalars included); the first
    fenced block that holds exactly one JSON value; the longest object or array
    found anywhere in the text, so prose around one object or array is tolerated.
    The problem is one line.
    """
    if not isinstance(text, str) or not text.strip():
        return None, "the answer is empty"
    try:
        return _DECODER.decode(text.strip()), None
    except (ValueError, RecursionError):
        pass
    for fence in itertools.islice(_FENCE_OPEN.finditer(text), _MAX_SCAN_STARTS):
        # Decoded from the fence onwards rather than cut at the next ```: a JSON
        # string may itself contain a fence.
        start = len(text) - len(text[fence.end():].lstrip())
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        rest = text[end:].lstrip()
        if not rest or rest.startswith("```"):  # the whole block, not "1." of a numbered list
            return value, None
    return _scan(text)


def _json_path(path) -> str:
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def _one_line(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validate_output(text: str, schema: dict) -> tuple[bool, list[str], object | None]:
    """``(valid, errors, value)`` for a child's final ``text`` against ``schema``.

    Errors are stable, one line each (``<json path>: <message>``, at most
    `MAX_ERROR_CHARS`), sorted by path (array indices numerically) then message,
    at most `MAX_ERRORS` plus a ``... and N more`` line. A text holding no JSON is
    one ``$: <problem>`` error with ``value`` None. A schema that cannot be applied
    (say an unresolvable ``$ref``, or one to a URL: never fetched) is one error too; this never
    raises. Patterns take at most `MAX_PATTERN_SECONDS` in all, the whole check `MAX_CHECK_SECONDS` (or, after a
    match overran its time, the rest of it the difference); a value not matched, or an answer not checked, by then
    is an error.
    """
    value, problem = extract_json(text)
    if problem is not None:
        return False, [_one_line(f"$: {problem}")], None
    started = time.monotonic()
    deadline, check_deadline = _BUDGET.set(started + MAX_PATTERN_SECONDS), _CHECK_DEADLINE.set(
        started + MAX_CHECK_SECONDS)
    try:
        found = list(_bounded_class(_validator_class(schema))(schema, registry=_NO_RETRIEVAL).iter_errors(value))
    except _OutOfTime:
        return False, [f"$: the answer could not be checked against output_schema: checking took longer than the "
                       f"{MAX_CHECK_SECONDS} s a check may take (the schema applies its subschemas to the same values "
                       "over and over), so it was not shown to match"], value
    except Exception as exc:  # unresolvable $ref, RecursionError, ...
        return False, [_one_line(f"$: the schema could not be applied: {exc}")], value
    finally:
        _CHECK_DEADLINE.reset(check_deadline)
        _BUDGET.reset(deadline)
    if not found:
        return True, [], value

    def order(error) -> tuple:
        return tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in error.absolute_path), error.message

    # dict.fromkeys: one key no pattern matched in time is told by patternProperties and additionalProperties alike
    lines = list(dict.fromkeys(
        _one_line(f"{_json_path(e.absolute_path)}: {e.message}") for e in sorted(found, key=order)))
    if len(lines) > MAX_ERRORS:
        lines = lines[:MAX_ERRORS] + [f"... and {len(lines) - MAX_ERRORS} more"]
    return False, lines, value


def correction_prompt(errors: list[str]) -> str:
    """The user message of the one correction turn: the exact errors, never the schema again."""
    listed = "\n".join(f"- {e}" for e in errors)
    return (
        "Your final answer did not satisfy the output contract. Validation errors:\n"
        f"{listed}\n"
        "Reply with ONLY the corrected JSON value, matching the schema from your instructions: "
        "no prose, no code fence."
    )
