"""Review of e1d72c7d: a file whose first bytes only name a picture, refused by the decoder and listed as a file,
keeps its place among the files listed, in the order the user sent them; no file is lost or told twice."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.testing import FakeClock
from gateway.attachments import prepare
from platforms.base import Attachment
from tests.gateway.test_attachments_undecodable_and_plain import CUT_JPEG, GIF_NOTE, LISTED, MISSED, Files, text_of
from tests.pictures import PNG


async def run(files: dict[str, bytes], attachments: tuple[Attachment, ...], ws: Path):
    return await prepare(Files(files), "slack", attachments, "look", workspace=ws, folder="c-1",
                         supports_vision=True, clock=FakeClock())


async def test_a_refused_look_alike_is_listed_where_it_was_sent(tmp_path: Path) -> None:
    # Was listed after every other file: 2-words.txt, 4-doc.pdf, 1-notes.txt, 3-scan.jpg.
    files = {"a": GIF_NOTE, "b": b"plain words", "c": CUT_JPEG, "d": b"%PDF-1.7 x", "e": PNG}
    prepared = await run(files, (Attachment("document", "1-notes.txt", "text/plain", len(GIF_NOTE), "a"),
                                 Attachment("document", "2-words.txt", "text/plain", 11, "b"),
                                 Attachment("document", "3-scan.jpg", "image/jpeg", len(CUT_JPEG), "c"),
                                 Attachment("document", "4-doc.pdf", "application/pdf", 10, "d"),
                                 Attachment("document", "5-shown.png", "image/png", len(PNG), "e")), tmp_path)
    listing = text_of(prepared.content).split(LISTED, 1)[1]
    assert [line.split(" ", 2)[1] for line in listing.splitlines()] == [
        "attachments/c-1/1-notes.txt", "attachments/c-1/2-words.txt", "attachments/c-1/3-scan.jpg",
        "attachments/c-1/4-doc.pdf"]


KINDS = {"note": GIF_NOTE, "words": b"plain words", "cut": CUT_JPEG, "pdf": b"%PDF-1.7 x", "png": PNG}


@settings(max_examples=int(os.environ.get("REVIEW_EXAMPLES", 150)), deadline=None)
@given(sent=st.lists(st.tuples(st.sampled_from(sorted(KINDS)), st.sampled_from(["image", "document"])),
                     min_size=1, max_size=10))
def test_each_file_is_shown_listed_or_missed_once_in_order(sent: list[tuple[str, str]]) -> None:
    attachments = tuple(Attachment(kind, f"f{i}-{what}.bin", None, len(KINDS[what]), what)
                        for i, (what, kind) in enumerate(sent))
    with tempfile.TemporaryDirectory() as ws:
        prepared = asyncio.run(run(KINDS, attachments, Path(ws)))
    content = text_of(prepared.content)
    listing = content.split(LISTED, 1)[1].split("]", 1)[0] if LISTED in content else ""
    listed = [line.split(" ", 2)[1].rsplit("/", 1)[1] for line in listing.splitlines()]
    assert listed == sorted(listed, key=lambda name: int(name[1:].split("-")[0]))
    missed = content.split(MISSED, 1)[1] if MISSED in content else ""
    shown = sum(p["type"] == "image_url" for p in prepared.content) if isinstance(prepared.content, list) else 0
    for a in attachments:
        told = listed.count(a.name) + missed.count(a.name)
        assert told == 1 or told == 0 and a.ref == "png" and shown, (a.name, content)  # a ninth picture is listed
    assert shown + len(listed) + missed.count(".bin (") == len(attachments)
