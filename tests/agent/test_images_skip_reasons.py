"""An unusable image is logged by kind, its name left out where the reason quotes it (``'photo.jpg' is
outside the workspace``), and only there: a name that is also a word of the reason (``a``, ``image``) left the
reason itself garbled ("is not <image> regul<image>r file")."""

from __future__ import annotations

import logging
from pathlib import Path

from agent.images import first_turn_content


def test_an_image_named_like_a_word_of_the_reason_leaves_the_reason_whole(tmp_path: Path, caplog) -> None:
    (tmp_path / "image").write_text("not a picture")
    caplog.set_level(logging.WARNING, logger="agent.images")
    first_turn_content("describe them", ["a", "image", "../a"], workspace=tmp_path, supports_vision=True)
    assert [r.getMessage() for r in caplog.records if r.name == "agent.images"][:3] == [
        "an image (a file) skipped: does not exist or is not a regular file",
        "an image (a file) skipped: is not a PNG, JPEG, GIF or WebP image",
        "an image (a file) skipped: <image> is outside the workspace",
    ]
