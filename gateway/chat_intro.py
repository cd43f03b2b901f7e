"""The first screen of ``switchboard chat``: what is running and what to try."""

from __future__ import annotations

from gateway.config import Config
from gateway.config.secret_values import shown_url
from gateway.display import turn_display
from platforms.local import LocalAdapter

_DEMO_TRY = """\
Try:
  hello                          the demo model says what it is
  Compare these:                 paste a list (or end lines with \\ to continue them):
  - apples                       each item goes to a subagent, and the answer
  - pears                        names each one
  /agents                        what the subagents are doing, or did
  /help                          every command; /quit (or Ctrl-D) leaves"""

_MODEL_TRY = """\
Try: ask anything; paste a list of tasks to see them handed to subagents.
/agents shows what the subagents are doing, /stop stops them, /help lists every command, /quit leaves."""


_CONNECTING = {"telegram": "Telegram", "slack": "Slack", "discord": "Discord"}
"""The platforms whose start connects to a server elsewhere: seconds, or a failure that ends the chat."""
_SERVED = (*_CONNECTING.items(), ("webhook", "the webhook routes at {base}/webhooks/<route>"))
"""The other platforms ``switchboard chat`` runs alongside the terminal when enabled, as the first screen names them."""


def chat_intro(config: Config, pinned: str | None = None, port: int | None = None) -> str:
    """A few lines: the model and how delegation shows here, then what to type. ``pinned``: the
    delegation mode of the session this chat goes on with (None for a first chat), which it keeps
    until ``/new`` whatever the configuration says now. ``port``: the one the HTTP server listens on,
    when this chat runs it (``server.port: 0`` picks a free one as it starts); None: ``server.port``."""
    model = config.model
    if model.provider == "demo":
        who = "the offline demo model (no API key needed; every reply says [demo])"
    else:
        # Shown without a proxy's token, password or query credential: the screen may be shared.
        where = f" at {shown_url(model.base_url)}" if model.base_url else ""
        who = f"{model.provider} model {model.name}{where}"
    configured = "inline" if config.delegation.gateway_mode == "inline" else "background"  # the terminal's `auto`
    mode = pinned or configured
    if mode == "inline":
        shown = "delegated work finishes inside the turn, as one answer"
        interval = config.agent.gateway_notify_interval
        # Notices turned off for the terminal (`display.platforms.local.long_running_notifications: false`)
        # show no such line, however short the interval: promised, the chat looked stuck while it worked.
        display = turn_display(config, LocalAdapter.name, LocalAdapter.tier)
        if interval > 0 and (display.progress == "card" or display.long_running_notifications is not False):
            shown += f", with a ⏳ progress line every {interval:g} s"
    else:
        shown = "delegated work runs in the background: an acknowledgement now, the results when they are ready"
    if mode != configured:  # as `make run` leaves it for a plain `switchboard chat`
        shown += (".\nThis chat's session began so and keeps it; /new starts one that delegates "
                  f"{'inline' if configured == 'inline' else 'in the background'}, as configured")
    body = _DEMO_TRY if model.provider == "demo" else _MODEL_TRY
    return f"Switchboard terminal chat with {who}.\nHere {shown}.\n{body}\n{_elsewhere(config, port)}\n"


def browsable_base(host: str, port: int) -> str:
    """The HTTP server's address as a browser on this machine opens it: a wildcard bind as loopback, an IPv6
    address in brackets (the first screen here, and `switchboard run`'s start-up lines, name it alike). Port 0,
    a free one not picked yet, as ``<free port>``: ``:0`` is no address a browser opens."""
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
    return f"http://{host}:{port or '<free port>'}"


def _elsewhere(config: Config, port: int | None) -> str:
    """Where the same agent can be reached besides this terminal, and how to get there. A platform enabled in
    the configuration runs here too, and with it the HTTP server: told that `switchboard run` would serve the
    web chat once enabled, the user of a chat already serving it looked for a step that was done."""
    base = browsable_base(config.server.host, config.server.port if port is None else port)
    where = config.source or "switchboard.yaml"
    p = config.platforms
    running = [f"the web chat at {base}/chat"] if p.web.enabled else []
    running += [title.format(base=base) for name, title in _SERVED if getattr(p, name).enabled]
    if not running:
        return (f"Elsewhere: `switchboard run` serves the web chat at {base}/chat\n"
                f"once {where} sets platforms.web.enabled: true, and Telegram, Slack or Discord\n"
                "once enabled under platforms: there (README.md, docs/platforms/).")
    if config.server.console:
        running.append(f"the operator console at {base}/console")
    # The first screen comes before the platforms start: one that connects elsewhere is not running yet, and may
    # never (an unreachable api_base ends the chat). Said "running", it was a claim the next lines took back.
    starting = any(getattr(p, name).enabled for name in _CONNECTING)
    header = "Starting here too (this chat says when they are running):" if starting else "Also running here:"
    line = header + "".join(f"\n  {what}" for what in running)
    if not p.web.enabled:
        line += f"\nThe web chat too, at {base}/chat, once {where} sets platforms.web.enabled: true."
    return line


def started(config: Config) -> str | None:
    """Said in the chat once every platform has started, when the first screen said they were starting; None when
    it said they were running."""
    p = config.platforms
    names = [title for name, title in _CONNECTING.items() if getattr(p, name).enabled]
    if not names:
        return None
    names = (["the web chat"] if p.web.enabled else []) + names + (["the webhook routes"] if p.webhook.enabled else [])
    if config.server.console:
        names.append("the operator console")
    return f"Running here too now: {', '.join(names)}."


def start_failed(platform: str | None) -> str | None:
    """Said in the chat when ``platform`` would not start, one the first screen said was starting: the process's
    one line on stderr, its last (after what a turn still running answers), says why
    (`gateway.startup_errors.explain`). None for another cause (a port in use, a state database this version
    cannot read): it may come before the first screen, or with nothing said to be starting; the line alone says."""
    what = _CONNECTING.get(platform or "")
    return None if what is None else f"{what} could not start, so this chat ends; its last line says why."
