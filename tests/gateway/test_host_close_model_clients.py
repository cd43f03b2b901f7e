"""A model client whose close fails at the stop: logged, the others closed all the same, and the stop goes on
(raised, it skipped the rest of the host's close and, at a stop the store refused, replaced the journal's error)."""

from __future__ import annotations

import logging

from agent.models.scripted import ScriptedModel
from gateway.host import AgentHost
from gateway.testing import make_config


class Closing(ScriptedModel):
    def __init__(self, fails: bool) -> None:
        super().__init__({"parent": [[{"text": "hi"}]]})
        self.fails, self.closed = fails, False

    async def aclose(self) -> None:
        self.closed = True
        if self.fails:
            raise RuntimeError("connection pool already gone")


async def test_a_client_whose_close_fails_is_logged_and_the_others_are_closed(tmp_path, caplog):
    parent, child = Closing(fails=True), Closing(fails=False)
    host = AgentHost(make_config(tmp_path), model=parent)
    await host.start()
    host._child_models[("openai", "child")] = child  # a child model the routes built
    await host.close(grace=0)
    assert parent.closed and child.closed and host.database.closed
    assert any(r.levelno == logging.WARNING and r.getMessage().startswith("closing the client of model")
               for r in caplog.records)
