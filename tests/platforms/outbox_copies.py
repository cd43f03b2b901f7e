"""A file as the outbox hands it to an adapter's `send_file`, for the adapters' own tests."""

from __future__ import annotations

from pathlib import Path

from platforms.base import OutboundFile


def outbox_copy(tmp_path: Path, name: str, data: bytes) -> OutboundFile:
    """A file as the outbox hands it over: its own copy, removed once the send is settled."""
    folder = tmp_path / "outbox-files" / "k"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return OutboundFile(str(folder / name), name, len(data))
