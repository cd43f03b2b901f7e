"""A webhook route's ``previous_secret`` (a secret being rotated out): masked like ``secret`` wherever the
configuration is shown, and held to the rule that two routes never share a secret."""

from __future__ import annotations

import io

import pytest
import yaml

from gateway.config import ConfigError, config_check, config_secrets

NEW = "whsec-new-0123456789abcdef"
OLD = "whsec-old-fedcba9876543210"


def test_config_check_masks_the_previous_secret(write):
    path = write(f"platforms:\n  webhook: {{enabled: true, routes: {{alerts: {{secret: {NEW},"
                 f" previous_secret: '${{OLD_HOOK}}'}}}}}}\n")
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={"OLD_HOOK": OLD}) == 0, err.getvalue()
    assert OLD not in out.getvalue() and NEW not in out.getvalue()
    route = yaml.safe_load(out.getvalue())["platforms"]["webhook"]["routes"]["alerts"]
    assert (route["secret"], route["previous_secret"]) == ("***", "***")


def test_the_previous_secret_is_kept_out_of_logs_and_reprs(load):
    config, _ = load(f"platforms: {{webhook: {{routes: {{alerts: {{secret: {NEW}, previous_secret: {OLD}}}}}}}}}\n")
    assert config.platforms.webhook.routes["alerts"].previous_secret == OLD
    assert OLD in config_secrets(config, env={})  # what the log redacts
    assert OLD not in repr(config)


def test_a_previous_secret_that_is_another_routes_secret_is_an_error_naming_both(load):
    with pytest.raises(ConfigError) as info:
        load(f"platforms:\n  webhook: {{enabled: true, routes: {{alerts: {{secret: {NEW}, previous_secret: {OLD}}},"
             f" reports: {{secret: {OLD}}}}}}}\n")
    assert info.value.errors == [
        "platforms.webhook.routes.reports.secret: the same as routes.alerts.previous_secret; a caller holding it could"
        " post to and read both routes (alerts and reports): give each route a secret of its own"]
    assert not any(OLD in e or NEW in e for e in info.value.errors)


def test_a_route_rotating_its_secret_is_fine(load):
    config, _ = load(f"platforms:\n  webhook: {{enabled: true, routes: {{alerts: {{secret: {NEW},"
                     f" previous_secret: {OLD}}}, reports: {{secret: {NEW}-2}}}}}}\n")
    assert config.platforms.webhook.routes["alerts"].previous_secret == OLD
