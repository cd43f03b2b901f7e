"""`RouteModels.aclose` closes every route's model: one that failed to close left the routes after it
unclosed (their HTTP clients open until the process ended), and nothing said which route failed."""

from __future__ import annotations

import logging

from agent.settings import ModelSettings
from lifecycle.plugins.advanced_delegation import _models
from lifecycle.plugins.advanced_delegation._models import RouteModels


class _Closable:
    def __init__(self, route: str, closed: list[str]) -> None:
        self.route, self.closed = route, closed

    async def aclose(self) -> None:
        if self.route == "broken":
            raise OSError("the connection pool is gone")
        self.closed.append(self.route)


async def test_a_model_that_fails_to_close_leaves_no_other_route_unclosed(monkeypatch, caplog):
    closed: list[str] = []
    monkeypatch.setattr(_models, "build_model", lambda settings: _Closable(settings.name, closed))
    models = RouteModels()
    for route in ("first", "broken", "last"):
        models.get(route, ModelSettings(provider="demo", name=route))
    with caplog.at_level(logging.ERROR, logger="lifecycle.plugins.advanced_delegation"):
        await models.aclose()
    assert closed == ["first", "last"]
    [failure] = caplog.records
    assert failure.getMessage() == "closing route broken's model failed"
