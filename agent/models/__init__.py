"""Model implementations behind the `agent.Model` seam.

`OpenAIModel` is imported lazily: the SDK takes over a second to import and
the demo and scripted models do not need it.
"""

from typing import Any

__all__ = ["OpenAIModel"]


def __getattr__(name: str) -> Any:
    if name == "OpenAIModel":
        from agent.models.openai import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module 'agent.models' has no attribute {name!r}")
