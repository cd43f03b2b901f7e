"""Build the configured model provider."""

from __future__ import annotations

from collections.abc import Mapping

from agent._model import Model
from agent.models.demo import DemoModel
from agent.models.scripted import ScriptedModel
from agent.settings import ModelSettings


def build_model(settings: ModelSettings, *, env: Mapping[str, str] | None = None) -> Model:
    """A model for ``settings.provider``; raises ValueError naming what is missing."""
    if settings.provider == "demo":
        return DemoModel(settings.demo, name=settings.name)
    if settings.provider == "scripted":
        if not settings.script:
            raise ValueError("model.script: the scripted provider needs the path of a script file")
        return ScriptedModel.from_file(
            settings.script, name=settings.name, context_window=settings.context_window,
            supports_vision=settings.supports_vision,
        )
    if settings.provider == "openai":
        from agent.models.openai import OpenAIModel  # the SDK import is slow; only when used

        return OpenAIModel(settings, env=env)
    raise ValueError(f"model.provider: unknown provider {settings.provider!r}")
