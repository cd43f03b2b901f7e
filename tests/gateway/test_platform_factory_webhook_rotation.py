"""A webhook route's ``previous_secret`` reaches the adapter: a caller still signing with it is not refused."""

from __future__ import annotations

from gateway.platform_factory import build_adapters
from gateway.testing import make_config
from platforms.webhook import Route, WebhookAdapter

NEW = "whsec-new-0123456789abcdef"
OLD = "whsec-old-fedcba9876543210"


def test_the_previous_secret_reaches_the_webhook_adapter(tmp_path) -> None:
    config = make_config(tmp_path, platforms={"webhook": {"enabled": True, "routes": {
        "alerts": {"secret": NEW, "previous_secret": OLD}, "reports": {"secret": NEW + "-2"}}}})
    [adapter] = build_adapters(config)
    assert isinstance(adapter, WebhookAdapter)
    assert adapter.routes == {"alerts": Route(NEW, None, OLD), "reports": Route(NEW + "-2", None)}
