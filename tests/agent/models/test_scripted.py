import pytest

from agent import ModelError, ModelRequest
from agent.models.factory import build_model
from agent.models.scripted import ScriptedModel
from agent.settings import ModelSettings


async def test_steps_are_keyed_by_role_turn_and_iteration():
    model = ScriptedModel({"parent": [[{"text": "p0"}], [{"text": "p1a"}, {"text": "p1b"}]], "leaf": [[{"text": "l0"}]]})
    assert (await model.complete(ModelRequest([], turn_index=1, iteration=1))).text == "p1b"
    assert (await model.complete(ModelRequest([], role="leaf"))).text == "l0"
    assert (await model.complete(ModelRequest([], turn_index=5))).text == "(script exhausted)"


async def test_callable_scripts_and_errors():
    model = ScriptedModel({"*": lambda req: {"error": "rate_limited"} if req.metadata.get("bad") else {"text": "ok"}})
    assert (await model.complete(ModelRequest([], role="leaf"))).text == "ok"
    with pytest.raises(ModelError) as err:
        await model.complete(ModelRequest([], metadata={"bad": True}))
    assert err.value.kind == "rate_limited"


def test_factory_loads_a_script_file(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("parent:\n  - - text: hello\n")
    model = build_model(ModelSettings(provider="scripted", script=str(script)))
    assert isinstance(model, ScriptedModel)
    assert model.script["parent"][0][0] == {"text": "hello"}
    with pytest.raises(ValueError, match="model.script"):
        build_model(ModelSettings(provider="scripted"))
