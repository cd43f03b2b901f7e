"""Errors of the agent runtime.

    AgentError
    ├── ModelError            a model request failed (kind, retry_after, status)
    ├── ToolError             a tool refused or failed; becomes a tool result, never a crash
    ├── PluginError           a plugin failed to import or register
    └── TurnInProgress        run_turn called while a turn of the same session runs
"""

from __future__ import annotations

import re

BODY_TOO_LARGE = "request body too large (HTTP 413)"
"""Written into the text of a 413: the request was larger than the server, or a proxy in front of it
(nginx takes 1 MB by default, less than one photo sent inline), accepts. Asking again cannot help; a
shorter conversation (compacted, its older images dropped) may."""

_CONTEXT_EXCEEDED = re.compile(
    r"context[_ ](length|size|window)|maximum context|prompt is too long|maximum (model|prompt) length"
    r"|input tokens? (count \(\d+\) )?exceeds?|`inputs`( tokens \+ `max_new_tokens`)? must (be <=|have less than)|"
    r"ContextWindowExceeded|" + re.escape(BODY_TOO_LARGE), re.IGNORECASE)
"""How servers word a request over the model's context window (OpenAI, vLLM, llama.cpp, LM Studio,
Gemini, Anthropic's proxies, xAI, Hugging Face's text-generation-inference); LiteLLM names its exception
(``litellm.ContextWindowExceededError: …``) before the upstream's words, which may be none of these (Bedrock's
"Input is too long for requested model", Vertex's "The input token count exceeds the maximum"). A refusal told
only by OpenAI's ``context_length_exceeded`` code (Groq), or only by its status 413, has that written into its
text (`agent.models.openai`), which is what outlives the error."""


def exceeds_context(error_text: str) -> bool:
    """Whether a model error's text says the request was longer than the model's context window, or
    larger than its server accepts (`BODY_TOO_LARGE`); also read from a finished turn's ``TurnResult.error``."""
    return _CONTEXT_EXCEEDED.search(error_text) is not None


def body_too_large(error_text: str) -> bool:
    """Whether a model error's text says the request's body was refused as too large (`BODY_TOO_LARGE`)."""
    return BODY_TOO_LARGE in error_text


NOT_SENT = "not sent: the model server is down"
"""Written into the text of a model call that was not sent, its server having failed the calls before it
(`agent.models._outage`): the chat is told the model is unreachable, not to try again in a moment."""


def server_down(error_text: str) -> bool:
    """Whether a model error's text is that of a call not sent to a server known to be down (`NOT_SENT`)."""
    return NOT_SENT in error_text


TOOLS_NOT_SET_UP = "the model server is not set up for tool calls"
"""Written into the text of a ``bad_request`` whose server refuses any request that offers tools (vLLM started
without ``--enable-auto-tool-choice``, an Ollama model whose template has none), with what to fix: every turn
offers tools, so every turn meets it, and the chat is told so rather than of a setting it cannot name."""


def refuses_tools(error_text: str) -> bool:
    """Whether a model error's text says its server takes no tools (`TOOLS_NOT_SET_UP`)."""
    return TOOLS_NOT_SET_UP in error_text


_FAILURE_KIND = re.compile(r"model request failed \((\w+)\): ")


def model_failure_text(kind: str, detail: str) -> str:
    """The text of a `ModelError` a provider raises for a failed request: its kind comes first, where
    `model_failure_kind` reads it back from text that outlived the error (a child's journaled error)."""
    return f"model request failed ({kind}): {detail}"


def model_failure_kind(error_text: str) -> str | None:
    """The `ModelError` kind of an error text `model_failure_text` wrote, else None."""
    match = _FAILURE_KIND.match(error_text)
    return match.group(1) if match else None


class AgentError(Exception):
    """Root of every error the agent package raises."""


class ModelError(AgentError):
    """A model request failed after the provider's own retries.

    ``kind`` is one of ``rate_limited``, ``server_error``, ``timeout``,
    ``connection`` and ``malformed``, which may pass once retried; ``auth``,
    ``blocked`` (the provider, or a firewall in front of it, refuses the country
    or network the request came from), ``not_found`` (no such model or endpoint),
    ``quota`` (the account is out of credit), ``content_filter`` (the provider's
    filter refused the request or withheld the answer), ``bad_request`` (the
    request refused as invalid: a setting or the tools the model does not take;
    or longer than its context window, `context_exceeded`) and ``bad_image`` (a
    picture in the request the server cannot read), which the same request meets
    again; ``scripted``, ``demo``. ``retry_after`` is the provider's hint in
    seconds when it gave one.
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after

    @property
    def context_exceeded(self) -> bool:
        """The server refused the request as longer than the model's context window: the same
        request fails again, a shorter one (the conversation compacted) may not."""
        return exceeds_context(str(self))


class ToolError(AgentError):
    """Raised by a tool to report a failure the model should read and act on."""


class PluginError(AgentError):
    """A plugin module could not be imported or its ``register(ctx)`` failed."""

    def __init__(self, module: str, message: str):
        super().__init__(f"plugin {module!r}: {message}")
        self.module = module
        self.reason = message
        """What went wrong, without the plugin's name (``import failed: ModuleNotFoundError: …``)."""


class TurnInProgress(AgentError):
    """A session runs one turn at a time."""
