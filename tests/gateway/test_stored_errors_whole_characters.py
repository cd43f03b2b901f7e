"""An error the state database keeps (an outbox send's, a message's handling) is cut to 500 characters: cut between
the code points of a flag or a skin-toned emoji, the console showed half of it (it shows the stored text as it is)."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.graphemes import whole_prefix
from gateway.store import GatewayStore
from tests.gateway.store.conftest import msg

FLAG = "\U0001f1fa\U0001f1e6"
THUMB = "\U0001f44d\U0001f3fd"


@pytest.mark.parametrize("cluster", [FLAG, THUMB, "e\u0301"])
def test_a_cut_at_500_keeps_the_cluster_across_it_out_whole(tmp_path, cluster):
    error = "x" * 499 + cluster + "tail"
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    try:
        [row] = store.outbox.add_messages([msg("t:reply:0")])
        store.outbox.mark_failed(row, error)
        kept = store.outbox.message("t:reply:0").last_error
    finally:
        store.close()
    assert kept == "x" * 499


def test_whole_prefix_is_a_prefix_within_the_limit():
    assert whole_prefix("ab" + FLAG + FLAG, 5) == "ab" + FLAG
    assert whole_prefix("abc", 5) == "abc"
    marks = "a" + "\u0301" * 100
    assert whole_prefix(marks, 50) == marks[:50]  # a cluster longer than the reach is cut between its code points
