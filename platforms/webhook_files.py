"""Files the agent sends to a webhook route: what a delivery says of one, and its download's id.

The bytes are kept by `platforms.web_files.WebFiles` (in ``<state_dir>/webhook-files/``, seven
days, swept hourly), as the web chat keeps its own, and served by the route's signed
``GET /webhooks/<route>/files/<id>``. The id is derived from the send's outbox key, not drawn
at random (`WebFiles.id_for`, keyed by a secret of its own folder's, so no id can be worked out
from another): the outbox sends a file again when the
process died before it recorded the send, and that retry must announce the download the
receiver may already have stored (under the same ``Idempotency-Key``), not keep a second copy
under another id.
"""

from __future__ import annotations

from platforms.web_files import KeptFile, download_headers

UPLOAD_LIMIT = 100 * 1000 * 1000
"""Bytes in one file: what the gateway keeps on its disk for seven days per send (as the web chat)."""
KEEP_SECONDS = 7 * 24 * 3600.0
"""How long a download works: as long as the turn's messages can be read."""
SWEEP_SECONDS = 3600.0


def download_path(route: str, file_id: str) -> str:
    """The path a caller GETs, signed, to download the file (route names and ids need no escaping)."""
    return f"/webhooks/{route}/files/{file_id}"


def described(route: str, kept: KeptFile) -> dict[str, object]:
    """What a delivery (or a turn read) carries about a kept file, under ``file``."""
    return {"id": kept.id, "name": kept.name, "size": kept.size,
            "content_type": download_headers(kept.name)["Content-Type"], "path": download_path(route, kept.id)}
