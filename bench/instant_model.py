"""The model the benchmarks run against: it answers at once, so what they time is the gateway's
or the lifecycle's own work."""

from __future__ import annotations

from agent import ModelRequest, ModelResponse


class InstantModel:
    name = "instant"
    context_window = 128_000
    supports_vision = False

    def __init__(self, text: str = "ok") -> None:
        self._text = text

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text=self._text)
