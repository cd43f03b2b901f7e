"""A slash command's event id, which the log and the console show, never holds its ``response_url``: whoever holds
that URL may post in the channel for 30 minutes. Without a ``trigger_id`` the command is named by a digest of it."""

from __future__ import annotations

from platforms.slack_commands import inbound_of

URL = "https://hooks.slack.com/commands/T0001/1234567890/kq7Zr0pWbX2sT9uVnE4aY6cD"


def command(**fields: str) -> dict[str, str]:
    return {"channel_id": "C1", "user_id": "U1", "command": "/stop", "text": "", **fields}


def test_a_command_is_named_by_its_trigger_id() -> None:
    trigger = "13345224609.738474920.8088930838d88f008e0"
    assert inbound_of("slack", command(trigger_id=trigger, response_url=URL)).event_id == f"command:{trigger}"


def test_without_a_trigger_id_a_command_is_named_by_a_digest_of_its_response_url_not_by_the_url() -> None:
    first = inbound_of("slack", command(response_url=URL))
    assert first.event_id.startswith("command:url-")
    assert "hooks.slack.com" not in first.event_id and "kq7Zr0pWbX2sT9uVnE4aY6cD" not in first.event_id
    assert inbound_of("slack", command(response_url=URL)).event_id == first.event_id  # a redelivery is a repeat
    assert inbound_of("slack", command(response_url=URL + "x")).event_id != first.event_id
    assert URL in first.reply_token  # still how the command is answered


def test_without_either_commands_are_not_taken_for_repeats_of_one_another() -> None:
    assert inbound_of("slack", command()).event_id != inbound_of("slack", command()).event_id
