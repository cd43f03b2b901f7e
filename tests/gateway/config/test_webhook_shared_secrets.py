"""Two webhook routes with one secret: a configuration error naming both, never the secret."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError

HOOK = "whsec-0123456789abcdef"


def test_two_webhook_routes_sharing_a_secret_is_an_error_naming_both(load):
    # A request is signed over its timestamp and body, not its route: the caller of one route
    # could post to the other (and sign reads of its turns and files) with the secret it holds.
    with pytest.raises(ConfigError) as info:
        load(f"platforms:\n  webhook: {{enabled: true, routes: {{alerts: {{secret: {HOOK}}},"
             f" reports: {{secret: {HOOK}}}, other: {{secret: {HOOK}-2}}}}}}\n")
    assert info.value.errors == [
        "platforms.webhook.routes.reports.secret: the same as routes.alerts.secret; a caller holding it could post"
        " to and read both routes (alerts and reports): give each route a secret of its own"]
    assert not any(HOOK in e for e in info.value.errors)


def test_webhook_routes_with_secrets_of_their_own_are_fine(load):
    config, _ = load(f"platforms:\n  webhook: {{enabled: true, routes: {{alerts: {{secret: {HOOK}}},"
                     f" reports: {{secret: {HOOK}-2}}}}}}\n")
    assert set(config.platforms.webhook.routes) == {"alerts", "reports"}
