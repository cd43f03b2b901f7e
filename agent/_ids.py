"""Ids for sessions, turns and children: unique across processes, cheap to make.

A random per-process prefix plus a counter. Reading the OS's randomness for
every id costs tens of microseconds on some machines, and these ids only have
to be unique, not secret (capabilities are what must not be guessable).
"""

from __future__ import annotations

import itertools
import os

_PREFIX = os.urandom(6).hex()
_COUNTER = itertools.count(1)


def new_id(prefix: str = "") -> str:
    return f"{prefix}{_PREFIX}{next(_COUNTER):x}"
