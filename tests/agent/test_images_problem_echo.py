"""`agent.images.images_problem` names a blank entry back cut short, as lifecycle cuts what it echoes: the
tool error stays in the conversation the model reads again at every later request of the turn."""

from __future__ import annotations

import pytest

from agent.images import images_problem


@pytest.mark.parametrize("blank", [" " * 100_000, "\n\t " * 40_000])
def test_a_huge_blank_entry_is_echoed_cut_to_60_characters(blank):
    problem = images_problem(["a.png", blank])
    assert problem == f"images[1] must be a non-empty string (a local path or URL), got {blank[:59] + '…'!r}"
    assert len(problem) < 400


def test_a_short_blank_entry_is_echoed_whole():
    assert images_problem([" " * 60]) == f"images[0] must be a non-empty string (a local path or URL), got {' ' * 60!r}"
