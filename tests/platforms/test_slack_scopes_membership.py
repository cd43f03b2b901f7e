"""The start's warning of a missing ``channels:read`` / ``groups:read`` scope (`platforms.slack_scopes`) says that the
bot events the scope brings must be subscribed too: added alone, as the warning's advice would have it, the scope
silences the warning and brings nothing, and the channel's work still stops only once Slack refuses a reply."""

from __future__ import annotations

import logging

import pytest

from platforms import slack_scopes
from platforms.fakes._slack_web_api import BOT_SCOPES


@pytest.mark.parametrize(("scope", "events"), [("channels:read", ("member_left_channel", "channel_left")),
                                               ("groups:read", ("member_left_channel", "group_left"))])
def test_a_missing_membership_scope_names_the_events_to_subscribe_to(caplog, scope, events):
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    slack_scopes.check({slack_scopes.HEADER: ",".join(s for s in BOT_SCOPES if s != scope)})
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"lacks the {scope} scope" in line and "deploy/slack-app-manifest.yaml" in line
    assert all(event in line for event in events)
