"""Writes that fail for real: code run in a child process whose files cannot grow past a limit.

No test can fill a disk, and a folder made read-only does not stop root (CI runs as root). A
child process with ``RLIMIT_FSIZE`` set, and SIGXFSZ (which would kill it) ignored, has every
write past the limit fail with EFBIG, as a full disk fails one with ENOSPC: the code under test
meets a real failed ``write``, ``close`` or copy, not a stand-in.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_PRELUDE = """\
import json, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY))
given = json.loads(sys.argv[1])
"""


def run_capped(code: str, *, limit: int, **given: Any) -> Any:
    """Run ``code`` (Python source, dedented) in a child process none of whose files may grow past
    ``limit`` bytes, with ``given`` (JSON values) as the dict ``given``; returns what it assigned
    to ``result`` (JSON). A child that fails fails the test, with its stderr."""
    source = _PRELUDE.format(limit=int(limit)) + textwrap.dedent(code) + "\nprint(json.dumps(result))\n"
    done = subprocess.run([sys.executable, "-c", source, json.dumps(given)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])
