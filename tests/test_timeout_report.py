"""The report a test that runs out of time leaves: where each asyncio task waits, and threads folded."""

from __future__ import annotations

import asyncio
import threading

from tests.timeout_report import dump_stacks


class Terminal:
    def __init__(self) -> None:
        self.text = ""

    def sep(self, char: str, title: str) -> None:
        self.text += f"~~ {title} ~~\n"

    def write(self, text: str) -> None:
        self.text += text


async def test_each_task_is_shown_down_to_the_await_it_waits_in():
    async def innermost(event: asyncio.Event) -> None:
        await event.wait()

    async def outer(event: asyncio.Event) -> None:
        await innermost(event)

    event = asyncio.Event()
    task = asyncio.create_task(outer(event), name="the-stuck-one")
    await asyncio.sleep(0)
    terminal = Terminal()
    dump_stacks(terminal)
    event.set()
    await task
    shown = terminal.text.split("~~ asyncio task the-stuck-one ~~\n")[1]
    assert "in outer" in shown and "in innermost" in shown and "await event.wait()" in shown


def test_threads_blocked_at_one_place_are_shown_once_with_their_count():
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait, name=f"idle-{n}") for n in range(7)]
    for thread in threads:
        thread.start()
    try:
        terminal = Terminal()
        dump_stacks(terminal)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert "~~ 7 thread(s) here: idle-0, idle-1, idle-2, idle-3, idle-4, … ~~" in terminal.text
