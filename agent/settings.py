"""Typed settings the agent runtime consumes (`model.*`, `agent.*`, `compression.*`).

These are plain frozen dataclasses: the gateway's config loader validates raw YAML
against them (types from the annotations, bounds and docs from field metadata) and
hands the agent runtime finished objects. Nothing here reads files or the
environment.

Field metadata understood by the loader:
- ``doc``: one line for `config check` and the example config.
- ``min`` / ``max``: inclusive numeric bounds.
- ``secret``: masked in `config check` output and never logged.
- ``lenient``: a bad value is warned about and replaced by the default instead of
  being an error.
- ``strict_keys`` (on a section): unknown keys anywhere inside it are errors, not
  warnings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


def setting(default, doc: str, **meta):
    """A dataclass field carrying its documentation and bounds for the config loader."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("settings defaults must be immutable")
    # A secret stays out of the settings' repr: a traceback's locals or a debug line would show it.
    return field(default=default, metadata={"doc": doc, **meta}, repr=not meta.get("secret"))


def nested(factory, doc: str, **meta):
    return field(default_factory=factory, metadata={"doc": doc, **meta})


@dataclass(frozen=True, slots=True)
class DemoModelSettings:
    child_steps: int = setting(3, "Tool-calling steps a demo child takes before it reports.", min=0)
    step_seconds: float = setting(1.0, "Pause after each demo child step, in seconds.", min=0)


@dataclass(frozen=True, slots=True)
class TranscriptionSettings:
    name: str | None = setting(
        None, "Speech-to-text model for voice messages (e.g. whisper-1); unset: voice messages are answered that "
        "voice is not supported."
    )
    base_url: str | None = setting(
        None, "OpenAI-compatible base URL serving /audio/transcriptions; model.base_url when unset."
    )
    api_key: str | None = setting(
        None, "API key of the transcription endpoint; model.api_key, else $OPENAI_API_KEY, when unset.", secret=True
    )
    language: str | None = setting(None, "ISO-639-1 code of the spoken language (e.g. en); detected when unset.")
    timeout_seconds: float = setting(60.0, "Timeout of one transcription request, in seconds.", min=0.001)


DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where the ``openai`` provider goes when neither ``model.base_url`` nor ``$OPENAI_BASE_URL`` is set."""



@dataclass(frozen=True, slots=True)
class ModelSettings:
    provider: Literal["demo", "openai", "scripted"] = setting(
        "demo", "Model provider: demo (offline), openai (any OpenAI-compatible endpoint) or scripted (tests)."
    )
    name: str = setting("demo", "Model name sent to the provider.")
    base_url: str | None = setting(
        None, "Chat-completions base URL, e.g. http://127.0.0.1:11434/v1 (openai provider); unset: $OPENAI_BASE_URL, else "
        f"OpenAI's own, {DEFAULT_BASE_URL}.")
    api_key: str | None = setting(
        None, "API key for the openai provider; defaults to $OPENAI_API_KEY. Printable ASCII only: a space, newline or "
        "other character pasted with it is refused.", secret=True
    )
    timeout_seconds: float = setting(
        120.0, "Timeout of one model request, in seconds: the whole answer, however the server paces it.", min=0.001)
    max_retries: int = setting(2, "Retries of a failed model request (429, 5xx but 504, connection errors); never of "
                                  "one that timed out.", min=0)
    max_concurrent_requests: int | None = setting(
        None, "Model requests this gateway sends one server at once at most (openai provider), the rest waiting "
        "their turn, first come first served, before their timeout starts: for a server that answers a few at a "
        "time (Ollama's OLLAMA_NUM_PARALLEL, llama.cpp's --parallel); unset: no bound.", min=1)
    wait_when_down_seconds: float = setting(
        600.0, "Seconds a chat's message waits in all for the model's server (or model) known to be down to come "
        "back, its chat told so once, before it is answered that the model is unreachable; 0: answered so at once.",
        min=0)
    context_window: int = setting(
        128_000, "The model's context window in tokens (drives compaction); set the server's real one (a local "
        "server's is often 8192 or 32768).", min=1024)
    supports_vision: bool = setting(False, "Whether the model accepts image parts.")
    temperature: float | None = setting(None, "Sampling temperature; provider default when unset.", min=0, max=2)
    script: str | None = setting(
        None, "Path of a YAML/JSON script for the scripted provider, relative to the config file."
    )
    demo: DemoModelSettings = nested(DemoModelSettings, "Behaviour of the offline demo model.")
    transcription: TranscriptionSettings = nested(
        TranscriptionSettings, "Speech-to-text for voice messages (any OpenAI-compatible audio/transcriptions endpoint)."
    )


def base_url_of(settings: ModelSettings, env: Mapping[str, str] | None = None) -> str:
    """The server the ``openai`` provider talks to: ``model.base_url``, else ``$OPENAI_BASE_URL`` (the
    SDK's own convention, honoured like ``$OPENAI_API_KEY``), else `DEFAULT_BASE_URL`. Resolved here,
    not left to the SDK, so the start's reachability check tries the server the conversations go to."""
    env = os.environ if env is None else env
    return settings.base_url or env.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL


def api_key_problem(settings: ModelSettings, env: Mapping[str, str] | None = None) -> str | None:
    """Why the ``openai`` provider's key (``model.api_key``, else ``$OPENAI_API_KEY``) can never be
    accepted, naming where it came from and never the key; None when it may be (or there is none).

    Keys are printable ASCII: anything else is a stray character pasted with one (a zero-width space,
    a non-breaking hyphen, a trailing newline), which no HTTP header carries, or the server refuses."""
    env = os.environ if env is None else env
    if settings.api_key:
        return key_problem(settings.api_key, "model.api_key")
    return key_problem(env.get("OPENAI_API_KEY") or "", "$OPENAI_API_KEY")


def key_problem(key: str, where: str) -> str | None:
    """`api_key_problem` for one key, ``where`` naming the setting or variable it came from."""
    for position, char in enumerate(key, 1):
        if not "!" <= char <= "~":
            return (f"{where} holds a character no API key has (U+{ord(char):04X}, character {position} of "
                    f"{len(key)}), most likely pasted with it; write the key alone")
    return None


GatedToolset = Literal["execute_code", "file"]
"""Toolsets that act on the gateway's machine (run code, write files): off on chat platforms
unless ``agent.toolsets`` or ``platforms.<p>.toolsets`` turns them on."""


@dataclass(frozen=True, slots=True)
class AgentSettings:
    system_prompt: str | None = setting(None, "Extra system prompt text for the parent agent.")
    max_iterations: int = setting(90, "Tool-calling iterations a parent turn may take.", min=1)
    workspace: str | None = setting(
        None, "Working directory for file tools and project context files, relative to the config file;"
        " default <state_dir>/workspace."
    )
    enabled_toolsets: tuple[str, ...] | None = setting(
        None, "Toolsets the parent may use, all when unset (chat platforms need agent.toolsets too for execute_code "
        "and file); a name no toolset has stops the start.")
    toolsets: tuple[GatedToolset, ...] = setting(
        (), "Toolsets chat platforms get although they are off there by default: execute_code, file."
    )
    disabled_tools: tuple[str, ...] = setting(
        (), "Individual tools removed from the parent (and so its children); a name no tool has stops the start.")
    gateway_notify_interval: float = setting(
        180.0, "Seconds between 'still working' notices in the gateway; <= 0 disables."
    )
    execute_code_timeout_seconds: float = setting(30.0, "Time limit of one execute_code run.", min=0.1)
    execute_code_output_limit: int = setting(50_000, "Characters of execute_code output kept.", min=100)
    execute_code_memory_mb: int = setting(
        1024, "MiB of memory (data: heap, buffers, thread stacks) each process of an execute_code run may use.",
        min=64,
    )
    clarify_timeout_seconds: float = setting(
        600.0, "How long a question the model asks in chat (clarify) waits for an answer.", min=1.0
    )
    memory_scope: Literal["chat", "global"] = setting(
        "chat", "Whose notes the memory tool keeps: each chat its own (chat), or one set for every chat (global)."
    )
    hook_timeout_seconds: float = setting(
        10.0, "How long one plugin hook may run before the turn or child goes on without it.", min=0.01
    )
    plugin_load_timeout_seconds: float = setting(
        30.0, "How long one plugin's import, and then its register(ctx), may each take before it fails to load.",
        min=0.01,
    )


@dataclass(frozen=True, slots=True)
class CompressionSettings:
    threshold: float = setting(
        0.50, "Fraction of the context window at which older turns are summarised.", min=0.05, max=1.0
    )
    threshold_tokens: int = setting(0, "Absolute token trigger (the lower trigger wins); 0 = off.", min=0)
