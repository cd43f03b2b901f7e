"""The newest message seen per conversation, kept across restarts for the catch-up at start."""

from __future__ import annotations

from gateway.store import GatewayStore
from platforms.slack import SlackAdapter


def test_the_newest_position_per_platform_and_conversation_survives_a_reopen(tmp_path):
    store = GatewayStore(tmp_path / "state.db")
    store.last_seen.record("slack", "D1", "1700000000.000009")
    store.last_seen.record("slack", "D1", "1700000000.000010")
    store.last_seen.record("slack", "C1/1700000000.000001", "1700000005.000001")
    store.last_seen.record("discord", "600", "1234567890123456789")
    store.close()
    store = GatewayStore(tmp_path / "state.db")
    assert store.last_seen.of("slack") == {"D1": "1700000000.000010", "C1/1700000000.000001": "1700000005.000001"}
    assert store.last_seen.of("discord") == {"600": "1234567890123456789"}  # a snowflake as it was, not a float
    assert store.last_seen.at("slack", "D1") == "1700000000.000010"
    assert store.last_seen.at("slack", "600") is None and store.last_seen.at("discord", "D1") is None
    store.close()


def test_slack_records_only_a_newer_ts_than_it_holds_even_where_a_float_would_round_them_together():
    recorded: list[tuple[str, str]] = []
    adapter = SlackAdapter(bot_token="xoxb-test", app_token="xapp-test", api_base="http://127.0.0.1:9/api/")
    adapter.bind_last_seen({"D1": "1999999999.999998"}, lambda conversation, ts: recorded.append((conversation, ts)),
                           lambda conversation: None)
    adapter._taken_in.mark("D1", None, "1999999999.999997")  # an older event taken in late: Slack does not order them
    adapter._taken_in.mark("D1", None, "1999999999.999999")
    adapter._taken_in.mark("C1", "1700000000.000001", "1700000005.000001")
    adapter._taken_in.mark("D1", None, "1999999999.999998")
    assert recorded == [("D1", "1999999999.999999"), ("C1/1700000000.000001", "1700000005.000001")]


def test_slack_keeps_in_memory_the_newest_message_of_the_ten_thousand_conversations_most_recently_taken_in():
    # Every thread and DM the bot took a message in was kept for as long as the process ran.
    recorded: list[tuple[str, str]] = []
    adapter = SlackAdapter(bot_token="xoxb-test", app_token="xapp-test", api_base="http://127.0.0.1:9/api/")
    adapter.bind_last_seen({"D1": "1700000000.000001"}, lambda conversation, ts: recorded.append((conversation, ts)),
                           lambda conversation: None)
    for n in range(20_000):
        adapter._taken_in.mark("C1", f"1700000000.{n:06d}", f"1700000001.{n:06d}")
    adapter._taken_in.mark("D1", None, "1700000002.000001")
    assert len(adapter._taken_in._newest) == 10_000 and adapter._taken_in._newest[("D1", None)] == "1700000002.000001"
    assert ("C1", "1700000000.019999") in adapter._taken_in._newest and ("C1", "1700000000.000000") not in adapter._taken_in._newest
    adapter._taken_in.mark("C1", "1700000000.019999", "1700000001.019998")  # older than the one held: not recorded
    assert len(recorded) == 20_001
