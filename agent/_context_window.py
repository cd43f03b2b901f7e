"""The context windows model servers named. A server that refuses a request as over its window
often says how large the window is ("This model's maximum context length is 8192 tokens"). That
number is kept per model object for the life of the process, so compaction works to the real
window from then on instead of to ``model.context_window``, which said more: without it every
later overflow, in every session, cost one more refused request.
"""

from __future__ import annotations

import logging
import re
import weakref
from typing import Any

log = logging.getLogger("agent.context_window")

_STATED_WINDOW = re.compile(
    r"maximum context length is (\d+)|context (?:length|size|window) (?:is|of) (\d+)"
    r"|available context size \((\d+) tokens\)|maximum model length of (\d+)|n_ctx: (\d+)"
    r"|maximum prompt length is (\d+)|`inputs` must have less than (\d+) tokens", re.IGNORECASE)
"""The window a server names when it refuses a request (OpenAI and vLLM: "This model's maximum context
length is 8192 tokens. However, …"; llama.cpp: "request (4476 tokens) exceeds the available context
size (4096 tokens)"; vLLM V1: "longer than the maximum model length of 8192"; LM Studio: "(n_keep: 13055>=
n_ctx: 4096)"; xAI: "This model's maximum prompt length is 131072 but the request contains …"; Hugging Face's
text-generation-inference: "`inputs` must have less than 4096 tokens. Given: …", which it refuses only past
4096)."""

_TOTAL_BOUND = re.compile(
    r"`inputs` tokens \+ `max_new_tokens` must be <= (\d+)"
    r"(?:\. Given: \d+ `inputs` tokens and (\d+) `max_new_tokens`)?", re.IGNORECASE)
"""text-generation-inference's other refusal (Together's too): "`inputs` tokens + `max_new_tokens` must be
<= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`". Its bound holds the answer as well as the
conversation, and the answer's share is the server's to choose (we send no ``max_tokens``), so the window
kept is what the conversation had room for: the bound less the ``max_new_tokens`` given (the bound itself
when a proxy cut the text short of them)."""

_LEAST_WINDOW = 1024
"""The least window believed, the least ``model.context_window`` takes. A smaller one is a garbled text's, or
text-generation-inference's bound less a ``max_new_tokens`` almost as large (``<= 4096 … 4095 `max_new_tokens```):
kept, it would have every later request of every session compacted towards nothing."""

_named: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_disbelieved: weakref.WeakSet[Any] = weakref.WeakSet()
"""Models whose server named a window under `_LEAST_WINDOW`, said once: a server's window that small is real too
(llama.cpp's ``-c 2048`` shared by ``--parallel 4`` slots leaves each 512), and its operator, told to set
``model.context_window`` to it, would not learn it, nor that the setting cannot go that low."""


def stated_window(error_text: str) -> int | None:
    """The window, in tokens, that a refusal's text names (where it bounds the conversation and the answer
    together, the conversation's share); None when it names none, or one under `_LEAST_WINDOW`."""
    window = _named_in(error_text)
    return window if window is not None and window >= _LEAST_WINDOW else None


def _named_in(error_text: str) -> int | None:
    if total := _TOTAL_BOUND.search(error_text):
        return int(total[1]) - int(total[2] or 0)  # an answer as long as the bound leaves no room at all
    stated = _STATED_WINDOW.search(error_text)
    return int(next(n for n in stated.groups() if n)) if stated else None


def remember_window(model: Any, error_text: str) -> None:
    """Keep the window ``error_text`` names as ``model``'s when it is less than the one known,
    and say so once per window learned."""
    window = stated_window(error_text)
    if window is None and (named := _named_in(error_text)) is not None:
        _say_disbelieved(model, named)
    if window is None or window >= context_window(model):
        return
    try:
        _named[model] = window
    except TypeError:  # a model object that cannot be weakly referenced: its refusals stay one-offs
        return
    # INFO: the session that met the refusal says, once, as a WARNING, that model.context_window is to be set.
    log.info("model %s: its server's context window is %d tokens (named when it refused a request), not the %d of "
             "model.context_window; conversations are compacted to fit %d from now on",
             getattr(model, "name", "?"), window, model.context_window, window)


def _say_disbelieved(model: Any, named: int) -> None:
    try:
        if model in _disbelieved:
            return
        _disbelieved.add(model)
    except TypeError:  # cannot be weakly referenced: said each time, as its refusals are one-offs
        pass
    log.warning("model %s: its server's refusal of a request leaves a conversation room for %d tokens, by its words; "
                "under %d, the least model.context_window takes, that is not believed, and conversations are still "
                "compacted to the %d of model.context_window: if the server's window is that small, give the server "
                "a larger one (llama.cpp's -c is shared among its --parallel slots)",
                getattr(model, "name", "?"), named, _LEAST_WINDOW, model.context_window)


def context_window(model: Any) -> int:
    """The smaller of ``model.context_window`` and the window its server named, if it named one."""
    try:
        named = _named.get(model)
    except TypeError:
        named = None
    return model.context_window if named is None else min(model.context_window, named)
