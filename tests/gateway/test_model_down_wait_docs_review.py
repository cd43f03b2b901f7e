"""docs/gateway.md on a message told it waits for the model down: "So does the call whose own failure took the server
for down" follows what a chat is told once it waits, not the sentence of a message that waited behind."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.replies import down_waiting_text

DOC = Path(__file__).parents[2] / "docs" / "gateway.md"


def test_so_does_follows_the_notice_it_refers_to():
    text = re.sub(r"\s+", " ", DOC.read_text(encoding="utf-8"))
    told = down_waiting_text(600)
    assert f"`{told}` So does the call whose own failure took the server for down" in text
