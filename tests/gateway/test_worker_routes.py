"""`switchboard worker` resolves a routed child's model as the gateway does: its route's model,
endpoint and key, from the worker's own copy of the configuration."""

from __future__ import annotations

import pytest

from agent import ModelRequest
from gateway.testing import make_config
from gateway.worker import WorkerModels, worker_toolbox
from lifecycle import RouteRefused
from tests.gateway.wire import openai_model

FAST_KEY = "sk-fast-route-secret-1234"
PARENT_KEY = "sk-parent-secret-5678"


async def test_a_worker_calls_a_routed_childs_route_model_with_the_routes_key(tmp_path, llm):
    main, fast = await llm(api_key=PARENT_KEY), await llm(api_key=FAST_KEY)
    fast.push_text("fast answer")
    config = make_config(
        tmp_path, model=openai_model(main, api_key=PARENT_KEY), plugins=["advanced_delegation"],
        delegation={"backend": "model_map", "model_map": {"fast": {
            "description": "Quick lookups.", "provider": "openai", "model": "fast-model", "base_url": fast.base_url,
            "api_key": FAST_KEY}}},
    )
    models = WorkerModels(config)
    toolbox, routing, plugins = await worker_toolbox(config, models)
    try:
        model = toolbox.route_model("model_map", "fast")
        response = await model.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}], role="leaf"))
        assert response.text == "fast answer"
        assert fast.requests[0]["model"] == "fast-model" and fast.authorizations == [f"Bearer {FAST_KEY}"]
        assert main.requests == []
        with pytest.raises(RouteRefused):
            toolbox.route_model("model_map", "slow")
    finally:
        await models.aclose()
        await routing.close()
        plugins.close()
