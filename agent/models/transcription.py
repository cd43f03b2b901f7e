"""`Transcriber`: speech to text through any OpenAI-compatible ``audio/transcriptions`` endpoint.

Configured by ``model.transcription`` (`agent.settings.TranscriptionSettings`): the
model name (``whisper-1``, ``gpt-4o-mini-transcribe``, a local server's model), and a
base URL and key that default to the chat model's (``model.base_url``,
``model.api_key``, ``$OPENAI_API_KEY``). Requests go through the official SDK, which
retries 429, 5xx and connection errors ``model.max_retries`` times (for as long as the call's retry budget
lasts, `agent.models._retry_budget`); a transcript that does
not come within ``timeout_seconds`` is not asked for again (the server had the whole upload
and is still working on it, see `_AskOnceClient`), unless the machine slept through it long enough
that no transcript can come any more (`agent.models._suspend`). What fails is one `ModelError` whose
text never contains the key (nor a password in the base URL).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import openai
from openai import AsyncOpenAI

from agent._clock import SYSTEM_CLOCK, Clock
from agent._errors import ModelError, model_failure_text
from agent.models._retry_budget import CALL, RetryBudget
from agent.models.openai import PLACEHOLDER_API_KEY, _named, _sdk_client, _translate_error, _url_credentials
from agent.settings import ModelSettings, api_key_problem, base_url_of, key_problem


class Transcriber:
    """One configured speech-to-text endpoint; `aclose` when done (idempotent). ``clock`` tells a
    suspend, unless ``client`` is given (a manual `FakeClock` in tests, as for `OpenAIModel`)."""

    def __init__(self, settings: ModelSettings, *, env: Mapping[str, str] | None = None,
                 client: AsyncOpenAI | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        speech = settings.transcription
        if not speech.name:
            raise ValueError("model.transcription.name: set a speech-to-text model to transcribe voice messages")
        env = os.environ if env is None else env
        api_key = speech.api_key or settings.api_key or env.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
        # As for the model's key: a stray character pasted with it fails every call as a refused key.
        self._key_problem = (key_problem(speech.api_key, "model.transcription.api_key") if speech.api_key
                             else api_key_problem(settings, env)) if client is None else None
        self.name = speech.name
        self._language = speech.language
        base_url = speech.base_url or base_url_of(settings, env)
        self._client = client or _sdk_client(api_key, base_url, timeout=speech.timeout_seconds,
                                             max_retries=settings.max_retries, clock=clock)
        self._owns_client = client is None
        self._transcriptions = self._client.audio.transcriptions
        self._secrets = tuple(sorted((k for k in (api_key, *_url_credentials(base_url))
                                      if k != PLACEHOLDER_API_KEY and len(k) >= 4), key=len, reverse=True))
        self._named = _named(self.name, base_url)

    async def transcribe(self, audio: bytes, *, filename: str, mime_type: str | None = None) -> str:
        """The text spoken in ``audio`` (stripped; may be empty for silence). Raises `ModelError`."""
        kwargs = {"language": self._language} if self._language else {}
        if self._key_problem is not None:
            raise ModelError(model_failure_text("auth", self._key_problem), kind="auth")
        budget = RetryBudget()
        token = CALL.set(budget)
        try:
            result = await self._transcriptions.create(
                model=self.name, file=(filename, audio, mime_type or "application/octet-stream"), **kwargs)
        except (openai.OpenAIError, json.JSONDecodeError, UnicodeError, RecursionError) as exc:
            raise _translate_error(exc, self._secrets, self._named, gave_up=budget.spent) from exc
        finally:
            CALL.reset(token)
        text = getattr(result, "text", None)
        if not isinstance(text, str):
            raise ModelError("transcription response malformed: no text", kind="malformed")
        return text.strip()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()
