"""`PluginThreads`: what an idle thread holds on to."""

from __future__ import annotations

import asyncio
import weakref

from agent import PluginThreads
from tests.polling import until


class _Big:
    """Stands for what a plugin tool returns: a file's bytes, a service's answer."""


async def test_an_idle_thread_keeps_neither_the_call_nor_what_it_returned():
    # A thread kept the last result it handed over until its next call: a plugin tool's megabytes, held
    # for as long as the process ran quiet.
    threads = PluginThreads(1, "test")
    try:
        future = threads.submit("plugin x: tool big", _Big)
        returned = weakref.ref(await asyncio.wrap_future(future))
        del future
        await until(lambda: returned() is None, timeout=3)
    finally:
        threads.close()
