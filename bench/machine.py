"""Which machine a benchmark ran on, for its header line.

Ratios to a bare asyncio task differ from one processor to another for the same code
(docs/lifecycle.md, "Speed"), so a figure is only comparable with the processor and
Python that produced it.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path


def describe() -> str:
    """``"<processor>, <n> CPUs, CPython 3.11.7"``; the processor as /proc/cpuinfo names it where there is one."""
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return f"{_processor()}, {os.cpu_count() or '?'} CPUs, {python}"


def _processor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"
