"""``/delegation``: show or switch the chat's delegation backend.

``/delegation`` shows the backend this session delegates through and its options (names
and descriptions only: never a provider, model or key), the one chosen for the next
session if it differs, and the backends there are. ``/delegation <backend>`` switches
from the next session (``/new``); with ``--now`` from the chat's next turn. The choice is
stored with the session and survives restarts. A backend that fails to list its options is
not switched to: its routed tasks would all be refused.
"""

from __future__ import annotations

from gateway.excerpt import typed
from gateway.logging import redact
from gateway.session_registry import SessionRegistry
from gateway.sessions import GatewaySession
from lifecycle import BackendUnavailable, Routing

USAGE = ("/delegation <backend> switches from the next session (/new); add --now to switch from your next "
         "message. Backends: {names}.")


NOW_SPELLINGS = frozenset({"--now", "\u2014now", "\u2013now"})
"""Phone keyboards' smart punctuation turns a typed ``--`` into an em or en dash: as sent, ``--now``
may arrive as ``—now``, and the user could never type the flag the usage tells them to add."""


def _is_now(word: str) -> bool:
    return word.lower() in NOW_SPELLINGS


def _sentence(text: str) -> str:
    """A backend's description as one sentence: a plugin's may end in its own full stop, ``!`` or ``?``,
    which a full stop after it doubled (``..``) or contradicted (``!.``)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", "\u2026")) else f"{text}."


class DelegationCommand:
    def __init__(self, registry: SessionRegistry, routing: Routing) -> None:
        self._registry = registry
        self._routing = routing

    def run(self, session: GatewaySession, args: str, *, apart: str | None = None) -> str:
        """``apart``: at a chat's top level, what to say of its threads (or topics), sessions of their own whose
        backend this neither shows nor switches; said with the backend shown, or chosen."""
        # Option texts are the operator's words: redacted like a log line, so no configured secret shows.
        return redact(self._run(session, args, apart))

    def _run(self, session: GatewaySession, args: str, apart: str | None) -> str:
        words = args.split()
        now = any(_is_now(w) for w in words)
        names = [w for w in words if not _is_now(w)]
        if not names:
            return self._show(session, apart) if not now else "Say which backend: /delegation <backend> --now."
        if len(names) > 1 or names[0].startswith("-"):
            return "Usage: " + USAGE.format(names=", ".join(self._routing.names()))
        backend = names[0].lower()
        if not self._routing.available(backend):
            return (f"There is no delegation backend {typed(backend)} here. "
                    f"Backends: {', '.join(self._routing.names())}.")
        current = session.backend
        if backend != current:
            try:
                self._routing.options(backend)
            except BackendUnavailable as exc:  # switched to, it would refuse every routed task
                return (f"Nothing changed: {exc}. Delegation here stays on {current}; try again later, or pick "
                        "another backend.")
        self._registry.choose_backend(session, backend, now=now)
        also = f" {apart}" if apart is not None else ""
        if now:
            if backend == current:
                return f"Delegation here already uses {backend}; it stays so for later sessions too.{also}"
            return (f"Delegation switched to {backend}: subagents started from your next message use it.{also}\n"
                    + self._options(backend))
        if backend == current:
            return f"Delegation here uses {backend}, and later sessions will too.{also}"
        return (f"From the next session (/new), delegation here uses {backend}. This session keeps {current}; "
                f"/delegation {backend} --now switches it from your next message.{also}")

    def _show(self, session: GatewaySession, apart: str | None) -> str:
        backend = session.backend
        lines = [f"Delegation here: {backend} — {_sentence(self._describe(backend))}"]
        if self._routing.available(backend):
            lines.append(self._options(backend))
        else:
            lines.append("It is not available now, so subagents cannot be started: /delegation default --now "
                         "switches back.")
        chosen = session.backend_choice
        if chosen is not None and chosen != backend:
            lines.append(f"From the next session: {chosen}.")
        if apart is not None:
            lines.append(apart)
        lines.append(USAGE.format(names=", ".join(self._routing.names())))
        return "\n".join(lines)

    def _describe(self, backend: str) -> str:
        try:
            return self._routing.description(backend)
        except BackendUnavailable:
            return "not available (its plugin is not loaded)"

    def _options(self, backend: str) -> str:
        try:
            options = self._routing.options(backend)
        except BackendUnavailable as exc:
            return (f"Its options cannot be shown: {exc}. Until it lists them, subagents run on the default child "
                    "model only.")
        if not options:
            return "No options: every subagent runs on the default child model."
        listed = "\n".join(f"• {o.name} — {o.description}" for o in options)
        return f"Options (a task's route):\n{listed}\nA task without a route uses the default child model."
