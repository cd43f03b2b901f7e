"""A route secret that starts or ends with whitespace: the line break a file's last line ends with, kept by
``${VAR}`` (a Kubernetes secret made with ``--from-file``). Its callers sign with the secret they were given, without
it, and every request was refused ``bad signature`` while ``switchboard config check`` said all was well, its
deliveries refused by receivers alike. The route is refused at start instead, naming it, never the secret."""

from __future__ import annotations

import pytest

from gateway.config import config_from_mapping
from gateway.errors import ConfigError
from platforms.webhook import Route, WebhookAdapter, secret_problem

SECRET = "alerts-secret-0123456789"


@pytest.mark.parametrize("secret", [SECRET + "\n", SECRET + "\r\n", SECRET + " ", "\t" + SECRET])
def test_a_secret_with_whitespace_at_an_end_is_refused_naming_the_route_not_the_secret(secret: str) -> None:
    with pytest.raises(ValueError, match=r"webhook route 'alerts': its secret (starts|ends) with") as refused:
        WebhookAdapter({"alerts": Route(secret)})
    assert SECRET not in str(refused.value)


def test_a_previous_secret_with_a_line_break_is_refused_too() -> None:
    with pytest.raises(ValueError, match="webhook route 'alerts': its previous_secret ends with a line break"):
        WebhookAdapter({"alerts": Route(SECRET, None, "old-secret-abcdef\n")})


def test_a_secret_with_a_space_inside_is_taken() -> None:
    adapter = WebhookAdapter({"alerts": Route("correct horse battery staple")})
    assert adapter.routes["alerts"].secret == "correct horse battery staple"
    assert secret_problem("correct horse battery staple") is None


def test_a_secret_read_from_a_file_with_its_line_break_is_a_config_error_naming_its_key() -> None:
    """As `switchboard config check` and `switchboard run` read it, the secret interpolated from the environment."""
    raw = {"platforms": {"webhook": {"enabled": True, "routes": {
        "alerts": {"secret": "${ALERTS_WEBHOOK_SECRET}", "deliver_url": "http://127.0.0.1:9/hook"}}}}}
    with pytest.raises(ConfigError) as refused:
        config_from_mapping(raw, env={"ALERTS_WEBHOOK_SECRET": SECRET + "\n"})
    assert "platforms.webhook.routes.alerts.secret: ends with a line break" in str(refused.value)
    assert SECRET not in str(refused.value)
