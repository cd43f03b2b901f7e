"""agent.images: an image refused is named without what refused it, so nothing holds the bytes read once the call is
over. Its exception kept its traceback and its context (the decoder's error), whose frames led back to the list of
refusals that held it: a cycle, in which each refused picture's bytes (20 MB for a large one) stayed until the
garbage collector ran; ten refused pictures of a message held 1 GB."""

from __future__ import annotations

import gc
import types

from agent.images import first_turn_content
from tests.pictures import photo


def test_a_refused_image_is_held_by_no_cycle(tmp_path):
    (tmp_path / "cut.jpg").write_bytes(photo((800, 600))[:5000])
    gc.collect()
    gc.disable()
    try:
        unusable: list[tuple[str, str]] = []
        first_turn_content("look", ["cut.jpg"], workspace=tmp_path, supports_vision=True, unusable=unusable)
        assert unusable and unusable[0][1].startswith("cannot be decoded as an image")
        # Unreachable, but not collected yet: what only a cycle keeps.
        left = [o.f_code.co_name for o in gc.get_objects()
                if isinstance(o, types.FrameType) and o.f_code.co_filename.endswith("agent/images.py")]
    finally:
        gc.enable()
    assert left == []
