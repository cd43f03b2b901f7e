"""What pytest-timeout prints when a test runs out of time, made useful for asyncio tests.

Its own report is every thread's stack: for a test on an event loop, the main thread's says
only that the loop was waiting in ``select``, and a few hundred idle worker threads bury
it. This report gives each asyncio task's stack first (where the test really waits), then
the threads, those blocked at the same place given once with their count.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback
from collections import defaultdict

import pytest_timeout


def dump_stacks(terminal) -> None:
    loop = asyncio._get_running_loop()  # the handler runs on the main thread, inside the test's loop
    if loop is not None:
        for task in sorted(asyncio.all_tasks(loop), key=lambda t: t.get_name()):
            terminal.sep("~", title=f"asyncio task {task.get_name()}")
            terminal.write(f"{task!r}\n" + "".join(traceback.StackSummary.extract(_awaiting(task.get_coro())).format()))
    names = {t.ident: t.name for t in threading.enumerate()}
    same: dict[str, list[str]] = defaultdict(list)
    current = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        if ident != current:
            same["".join(traceback.format_stack(frame))].append(names.get(ident, "<unknown>"))
    for stack, threads in same.items():
        shown = ", ".join(sorted(set(threads))[:5]) + (", …" if len(set(threads)) > 5 else "")
        terminal.sep("~", title=f"{len(threads)} thread(s) here: {shown}")
        terminal.write(stack)


def _awaiting(coro):
    """The frames of a suspended coroutine and of what it awaits, down to the innermost: the
    task's own stack has only its outermost coroutine."""
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None) or getattr(coro, "ag_frame", None)
        if frame is not None:
            yield frame, frame.f_lineno
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None) or getattr(coro, "ag_await", None)


def install() -> None:
    pytest_timeout.dump_stacks = dump_stacks
