"""How long the download of a file a user sent is given, on Slack and Discord (Telegram's is its
bot's request timeout, `platforms.telegram_files`, at the same rate).

A fixed 120 s for any file cut a 20 MB one off over a link slower than 1.4 Mbit/s, and every try
again the same way: a download is given `TIMEOUT` seconds plus one for every `SLOWEST_DOWNLOAD`
bytes of the file. A connection gone silent (a NAT or proxy that dropped it) was waited out to the
end of that, at each of the gateway's tries: `STALLED` seconds without a byte (the answer's first
included) give it up, a `NetworkError` tried again.
"""

from __future__ import annotations

import aiohttp

TIMEOUT = 120.0
SLOWEST_DOWNLOAD = 50_000
STALLED = 30.0


def client_timeout(size: int, total: float = TIMEOUT, stalled: float = STALLED) -> aiohttp.ClientTimeout:
    """The timeouts of downloading a file of ``size`` bytes."""
    return aiohttp.ClientTimeout(total=total + size / SLOWEST_DOWNLOAD, sock_read=stalled)
