"""Keeping the most recent entries of a mapping, for what an adapter remembers of a platform's ids.

Apart from any one adapter's module because several of Discord's (`platforms.discord`,
`platforms.discord_seen`, `platforms.discord_interactions`) keep such mappings.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any


def remember(store: OrderedDict[Any, Any], key: Any, value: Any, keep: int) -> None:
    """Set ``key`` as the most recent entry, dropping the least recent past ``keep``."""
    store[key] = value
    store.move_to_end(key)
    while len(store) > keep:
        store.popitem(last=False)
