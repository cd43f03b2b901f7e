"""Model implementations behind the `agent.Model` seam."""

from agent.models.openai import OpenAIModel

__all__ = ["OpenAIModel"]
