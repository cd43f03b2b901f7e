"""Checks across fields, run after every field is valid on its own.

These catch the mistakes that would otherwise surface only when an adapter
starts (a missing token) or never (a bot nobody may talk to).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from yarl import URL

from gateway.config.premises import Finding
from gateway.config.sections import Config
from gateway.config.shown import escaped, key_part
from platforms.web_access import is_loopback, proxy_networks
from platforms.webhook import ROUTE_NAME, secret_problem

_HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")  # an RFC 9110 token


_TOKEN_PATH = re.compile(r"/bot\d+:")
_BOT_TOKEN = re.compile(r"\d+:\S+")  # what aiogram accepts; anything else fails the start with no key named
_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")  # Telegram's setWebhook refuses any other
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")

# What a secret with whitespace at an end does (`secret_problem`: a file's last line break, kept by ${VAR}).
_BEARER_REFUSED = ("clients send the token without it (a header's ends are trimmed), and every request would be"
                   " refused 401")
_SLACK_TOKEN = "a Slack token holds none, and no HTTP header a line break"


def check_rules(config: Config) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` about combinations of settings."""
    errors: list[str] = []
    warnings: list[str] = []

    def require(platform: str, key: str, why: str) -> None:
        if not getattr(getattr(config.platforms, platform), key):
            errors.append(f"platforms.{platform}.{key}: required {why}")

    telegram, slack, discord = config.platforms.telegram, config.platforms.slack, config.platforms.discord
    if telegram.enabled:
        require("telegram", "token", "when platforms.telegram.enabled is true")
        if telegram.token and not _BOT_TOKEN.fullmatch(telegram.token):
            # Copied from a Bot API URL (…/bot123456789:AAE…/getMe), the token comes with its "bot".
            errors.append("platforms.telegram.token: expected the token @BotFather gave, such as 123456789:AAE…,"
                          ' without the "bot" the Bot API\'s URLs put in front of it'
                          if re.fullmatch(r"bot\d+:\S+", telegram.token) else
                          "platforms.telegram.token: expected the token @BotFather gave, such as 123456789:AAE…:"
                          " the bot's id, a colon, then the secret, without spaces")
        if telegram.mode == "webhook":
            require("telegram", "webhook_url", 'when platforms.telegram.mode is "webhook"')
            # Its path is the route the gateway serves: without a scheme there is none, and the start fails.
            url = telegram.webhook_url
            if url and (problem := _http_url_problem(url, example="https://bot.example.com/telegram")
                        or _bot_api_webhook_problem(url, telegram.api_base)):
                errors.append(f"platforms.telegram.webhook_url: {problem}")
            if telegram.webhook_secret and not _WEBHOOK_SECRET.fullmatch(telegram.webhook_secret):
                errors.append("platforms.telegram.webhook_secret: expected 1–256 characters among A-Z a-z 0-9 _ -"
                              " (Telegram refuses any other)")
    if slack.enabled:
        require("slack", "bot_token", "when platforms.slack.enabled is true")
        if slack.mode == "socket":
            require("slack", "app_token", 'when platforms.slack.mode is "socket"')
        else:
            require("slack", "signing_secret", 'when platforms.slack.mode is "http"')
        errors.extend(_slack_token_rules(slack.bot_token, slack.app_token if slack.mode == "socket" else None))
        errors.extend(_ends_problems({
            "platforms.slack.bot_token": (slack.bot_token, f"{_SLACK_TOKEN}: each file users share would fail"),
            "platforms.slack.app_token": (slack.app_token if slack.mode == "socket" else None,
                                          f"{_SLACK_TOKEN}: Socket Mode would never connect"),
            "platforms.slack.signing_secret": (slack.signing_secret if slack.mode == "http" else None,
                                               "Slack signs with the secret without it, and every event would be"
                                               " refused")}))
    if discord.enabled:
        require("discord", "token", "when platforms.discord.enabled is true")
        if discord.token and (problem := _discord_token_problem(discord.token)):
            errors.append(f"platforms.discord.token: {problem}")
    webhook = config.platforms.webhook
    if webhook.enabled:
        for name, route in webhook.routes.items():
            if not ROUTE_NAME.fullmatch(name):
                errors.append(f"platforms.webhook.routes.{name}: expected a route name of 1–64 letters, digits, '-' or"
                              " '_', starting with a letter or digit (it is the path of its URL, /webhooks/<name>)")
            if not route.secret:
                errors.append(f"platforms.webhook.routes.{name}.secret: required (requests are signed with it)")
            for key in ("secret", "previous_secret"):
                if (value := getattr(route, key)) and (problem := secret_problem(value)):
                    errors.append(f"platforms.webhook.routes.{name}.{key}: {problem}")
            # Caught here, not at the first reply: that would fail as a network error for an hour, then be dropped.
            url = route.deliver_url
            if url is not None and (problem := _http_url_problem(url, example="https://example.com/hooks/switchboard")):
                errors.append(f"platforms.webhook.routes.{name}.deliver_url: {problem}")
        if not webhook.routes:
            warnings.append(Finding("platforms.webhook: enabled with no routes, so no webhook can reach the gateway",
                                    ["platforms.webhook.routes"]))
        # A request is signed over its timestamp and body, not its route: one secret would let each
        # route's caller post to, and read the turns and files of, the other.
        # A previous_secret still signs requests during a rotation: it counts as one of its route's secrets.
        first: dict[str, tuple[str, str]] = {}
        for name, route in webhook.routes.items():
            for key in ("secret", "previous_secret"):
                secret = getattr(route, key)
                if secret and (where := first.setdefault(secret, (name, key)))[0] != name:
                    other = where[0]
                    errors.append(f"platforms.webhook.routes.{name}.{key}: the same as routes.{other}.{where[1]};"
                                  f" a caller holding it could post to and read both routes ({other} and {name}):"
                                  " give each route a secret of its own")

    errors.extend(_web_rules(config, warnings))
    server = config.server
    # /metrics takes it with the console off too.
    errors.extend(_ends_problems({"server.console_token": (server.console_token, _BEARER_REFUSED)}))
    if server.console and not server.console_token and not is_loopback(server.host):
        errors.append(f'server.console_token: required when server.host ("{server.host}") is not a loopback address:'
                      " the operator console at /console can stop subagents and resend messages (or set"
                      " server.console: false)")
    endpoint = config.telemetry.otlp_endpoint
    if endpoint and (problem := _url_problem(endpoint, example="http://127.0.0.1:4318")):
        errors.append(f"telemetry.otlp_endpoint: {problem}")
    errors.extend(_temporal_rules(config))
    errors.extend(_model_url_rules(config))
    errors.extend(_model_name_rules(config))
    warnings.extend(_unused_model_settings(config))
    if config.model.provider == "scripted":
        errors.extend(_script_rules(config.model.script))

    for name, platform in (("telegram", telegram), ("slack", slack), ("discord", discord),
                           ("web", config.platforms.web)):
        # An empty ${ADMIN_ID} matches no one: nobody would get in, and nothing would say why.
        errors.extend(f"platforms.{name}.allowed_users[{i}]: an empty entry lets nobody in: write a user id or"
                      " name, or remove it" for i, user in enumerate(platform.allowed_users)
                      if platform.enabled and isinstance(user, str) and not user.strip())
    for name, platform in (("telegram", telegram), ("slack", slack), ("discord", discord)):
        # ALLOWED=123,456 in an env file, given as one entry "${ALLOWED}": no id or username holds a comma
        # (a web proxy's names may, as a directory's do), so it would match nobody, without a word.
        errors.extend(f"platforms.{name}.allowed_users[{i}]: {user!r} holds several names; list each as an entry"
                      " of its own (allowed_users: [123, alice])" for i, user in enumerate(platform.allowed_users)
                      if platform.enabled and isinstance(user, str) and "," in user)
        if platform.enabled and (problem := _url_problem(platform.api_base)):
            errors.append(f"platforms.{name}.api_base: {problem}")
        if platform.enabled and not platform.allowed_users and not platform.allow_all:
            warnings.append(Finding(
                f"platforms.{name}: enabled with no allowed_users and allow_all false, so nobody may talk to the bot",
                [f"platforms.{name}.allowed_users", f"platforms.{name}.allow_all"]))

    for i, module in enumerate(config.plugins):
        if not _MODULE.fullmatch(module):
            errors.append(f'plugins[{i}]: expected an importable module name such as "my_plugins.weather", got "{module}"')
    return errors, warnings


def _web_rules(config: Config, warnings: list[str]) -> list[str]:
    web = config.platforms.web
    if not web.enabled:
        return []
    errors = _ends_problems({"platforms.web.token": (web.token, _BEARER_REFUSED)})
    if web.user_header is not None and not _HEADER.fullmatch(web.user_header):
        errors.append(f'platforms.web.user_header: expected an HTTP header name such as "X-Forwarded-User", '
                      f'got "{web.user_header}"')
    if web.allowed_users and not web.user_header:
        errors.append(Finding("platforms.web.allowed_users: needs platforms.web.user_header, the only source of a"
                              " web user's name", ["platforms.web.user_header"]))
    try:
        proxy_networks(web.trusted_proxies)
    except ValueError as exc:
        errors.append(f"platforms.web.trusted_proxies{exc}")
    if web.trusted_proxies and not web.user_header:
        errors.append(Finding("platforms.web.trusted_proxies: needs platforms.web.user_header, the header it says who"
                              " may set", ["platforms.web.user_header"]))
    host = config.server.host
    if not is_loopback(host) and not web.token:
        if not (web.user_header and web.allowed_users):
            # It rests on the one of the two that is missing beside the other: with both missing, either's
            # refusal leaves it standing (no token, no user_header, allowed_users: bob still needs the token).
            missing = ["platforms.web.allowed_users"] if web.user_header else (
                ["platforms.web.user_header"] if web.allowed_users else [])
            errors.append(Finding(f'platforms.web.token: required when server.host ("{host}") is not a loopback'
                                  " address (or set platforms.web.user_header with allowed_users)", missing))
        elif not web.trusted_proxies:
            warnings.append(Finding(f'platforms.web: the {web.user_header} header is taken from any client that'
                                    f' reaches server.host ("{host}"): one that gets around the signing-in proxy can'
                                    " send it with the name of a user in allowed_users and chat as them; set"
                                    " platforms.web.trusted_proxies to the proxy's address (or set"
                                    " platforms.web.token)",
                                    ["platforms.web.trusted_proxies", "platforms.web.token"]))
    if web.user_header and not web.allowed_users and not web.allow_all:
        warnings.append(Finding("platforms.web: user_header set with no allowed_users and allow_all false, so nobody"
                                " may chat", ["platforms.web.allowed_users", "platforms.web.allow_all"]))
    return errors


def _model_url_rules(config: Config) -> list[str]:
    """Every model endpoint that is set must be one: the start refuses a bad model.base_url (its
    check cannot reach it), and the others would fail each voice message or routed child."""
    urls = {"model.base_url": config.model.base_url, "model.transcription.base_url": config.model.transcription.base_url}
    for name, option in config.delegation.model_map.items():
        urls[f"delegation.model_map.{name}.base_url"] = option.base_url
    for name, profile in config.delegation.profile_routes.items():
        urls[f"delegation.profile_routes.{name}.base_url"] = profile.base_url
    return [f"{key}: {problem}" for key, url in urls.items()
            if url and (problem := _http_url_problem(url, example="http://127.0.0.1:11434/v1")
                        or endpoint_path_problem(url))]


def _model_name_rules(config: Config) -> list[str]:
    """Every model name set is one a provider could know: each is sent to it, and becomes a `/metrics` label, a
    span's name and part of log lines, where half of a UTF-16 pair (YAML's ``"\\ud83d"``; one from
    ``${MODEL}``, a byte that is no UTF-8, is refused as it is expanded) could not be encoded."""
    delegation = config.delegation
    names = {"model.name": config.model.name, "model.transcription.name": config.model.transcription.name,
             "delegation.model": delegation.model}
    for kind in ("model_map", "profile_routes"):
        names |= {f"delegation.{kind}.{key_part(name)}.model": route.model
                  for name, route in getattr(delegation, kind).items()}
    return [f"{key}: {problem}" for key, name in names.items()
            if isinstance(name, str) and (problem := _model_name_problem(name))]


def _model_name_problem(name: str) -> str | None:
    for char in name:
        kind = unicodedata.category(char)
        if kind in ("Cc", "Cs"):
            what = "a control character" if kind == "Cc" else "half of a UTF-16 pair"
            return f"{escaped(name)} holds {what} (U+{ord(char):04X}), which no model's name has; remove it"
    return None


_CLIENT_PATHS = ("/chat/completions", "/audio/transcriptions")
"""The paths the openai client adds to a base URL, for a chat and for a voice message."""


def endpoint_path_problem(url: str) -> str | None:
    """Why ``url`` is an endpoint, not the base URL the openai client adds its paths to (every request would be
    a 404 to …/v1/chat/completions/chat/completions), without echoing it; None if it is none."""
    path = URL(url).path.rstrip("/")
    for suffix in _CLIENT_PATHS:
        if path.endswith(suffix):
            return (f"expected the API's base URL, without {suffix}: the client adds that path itself"
                    " (http://127.0.0.1:11434/v1, not http://127.0.0.1:11434/v1" + f"{suffix})")
    return None


def _unused_model_settings(config: Config) -> list[str]:
    """``model.base_url`` and ``model.api_key`` that nothing reads: only the openai provider does (the parent's
    or a child's), and voice transcription where its own are unset. The provider defaults to demo, so a file
    written for a server but for ``provider: openai`` would answer with the offline model without a word. A
    warning, not the routes' error: a file switched to demo for a while, its server kept, still starts."""
    model, delegation = config.model, config.delegation
    routes = (*delegation.model_map.values(), *delegation.profile_routes.values())
    # Children built on the openai provider start from the parent's settings (a worker's too).
    if "openai" in (model.provider, delegation.provider, *(route.provider for route in routes)):
        return []
    speech = model.transcription
    # It rests on each provider (a route's, or its mapping where none is left) and on transcription.name, not on
    # a route's other settings: `model_map.fast.model: [x]` refused says nothing of model.base_url.
    reads = ["model.provider", "delegation.provider", "model.transcription.name"]
    for kind in ("model_map", "profile_routes"):
        reads += [f"delegation.{kind}.{name}.provider" for name in getattr(delegation, kind)] or [f"delegation.{kind}"]
    return [Finding(f"model.{key}: not used by the {model.provider} provider (only openai reads it), so the gateway"
                    f" answers with the {model.provider} model: set provider: openai or remove {key}", reads)
            for key in ("base_url", "api_key")
            if getattr(model, key) and not (speech.name and not getattr(speech, key))]


def _script_rules(script: str | None) -> list[str]:
    """The scripted model's script is read when the model is built, at start (the loader made its path absolute)."""
    if not script:
        return ['model.script: required when model.provider is "scripted" (the path of a YAML or JSON script)']
    problem = _unreadable(Path(script))
    return [f"model.script: {problem}"] if problem else []


_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):\d{1,5}")


def _temporal_rules(config: Config) -> list[str]:
    """Checked whatever the engine, so a worker's config file fails the same way as the gateway's."""
    temporal, errors = config.lifecycle.temporal, []
    if not _HOST_PORT.fullmatch(temporal.address) or not 0 < int(temporal.address.rsplit(":", 1)[1]) < 65536:
        errors.append(f'lifecycle.temporal.address: expected host:port such as "127.0.0.1:7233", got "{temporal.address}"')
    if not temporal.namespace.strip():  # else the gateway starts and fails every child, and a worker panics
        errors.append('lifecycle.temporal.namespace: expected a non-empty name such as "default"')
    if not temporal.task_queue.strip():
        errors.append("lifecycle.temporal.task_queue: expected a non-empty name such as \"switchboard-children\"")
    for key in ("namespace", "task_queue"):
        if problem := _temporal_name_problem(getattr(temporal, key)):
            errors.append(f"lifecycle.temporal.{key}: {problem}")
    errors.extend(_ends_problems({"lifecycle.temporal.api_key": (
        temporal.api_key, "an API key holds none, and the client sends one with a line break not at all: every"
        " call would be refused unauthenticated")}))
    tls = temporal.tls
    if not isinstance(tls, bool) and tls is not None:
        if (tls.cert_file is None) != (tls.key_file is None):
            errors.append("lifecycle.temporal.tls: cert_file and key_file go together (mutual TLS needs both)")
        # A worker reads them whatever the engine, as the gateway does with engine: temporal, when it connects.
        for key in ("ca_file", "cert_file", "key_file"):
            if (path := getattr(tls, key)) is not None and (problem := _unreadable(path)):
                errors.append(f"lifecycle.temporal.tls.{key}: {problem}")
    return errors


def _temporal_name_problem(name: str) -> str | None:
    """Why a Temporal name (task queue, namespace) would not be the one meant, else None. Temporal matches it as
    written: with a space at an end or a control character kept, the gateway and workers whose files differ only
    there use different queues (children wait for a worker that never comes), and the log shows the same name."""
    if not name.strip():
        return None  # told as empty
    shown = escaped(name)
    if name != name.strip():
        where = "starts" if name[0].isspace() else "ends"
        return (f"{shown} {where} with whitespace: Temporal keeps it in the name, so a gateway and workers whose files"
                " differ there use different ones; remove it")
    for char in name:
        kind = unicodedata.category(char)
        if what := _NAME_REFUSED.get(kind):  # a lone surrogate cannot even be sent: the client fails encoding it
            return (f"{shown} holds {what} (U+{ord(char):04X}): Temporal keeps it in the name, which reads"
                    " the same without it in the log; remove it")
    return None


_NAME_REFUSED = {"Cc": "a control character", "Cf": "an invisible character", "Zl": "a line break",
                 "Zp": "a line break", "Cs": "half of a UTF-16 pair"}


def _ends_problems(secrets: dict[str, tuple[str | None, str]]) -> list[str]:
    """An error for each secret set (by key: its value, and what it would do) that starts or ends with whitespace,
    as `secret_problem` words it for a webhook route's secret; never the secret."""
    return [f"{key}: {problem}" for key, (value, consequence) in secrets.items()
            if value and (problem := secret_problem(value, consequence))]


def _unreadable(path: Path) -> str | None:
    """Why the file at ``path`` (made absolute by the loader) cannot be read; None if it can."""
    try:
        with open(path, "rb"):
            return None
    except OSError as exc:
        return f"cannot read {Path(path).absolute()} ({exc.strerror})"


_WEBHOOK_PORTS = (443, 80, 88, 8443)
"""The only ports Telegram's own Bot API posts updates to (a local Bot API server takes any)."""


def _bot_api_webhook_problem(url: str, api_base: str) -> str | None:
    """Why Telegram's Bot API would refuse ``url`` in ``setWebhook``, failing every start with words that name
    the token; only its scheme or port are shown (its path may hold a secret). None for a self-hosted server."""
    try:
        if URL(api_base).host != "api.telegram.org":
            return None
    except ValueError:
        return None  # platforms.telegram.api_base's own error says so
    parsed = URL(url)
    if parsed.scheme != "https":
        return ("expected an https URL: the Telegram Bot API posts updates to no other (put a reverse proxy with"
                " a TLS certificate in front of server.port, and give its https:// address)")
    if parsed.port not in _WEBHOOK_PORTS:
        return (f"expected port 443, 80, 88 or 8443, got {parsed.port}: the Telegram Bot API posts updates to no"
                " other (let the reverse proxy listen on one of them, in front of server.port)")
    return None


def _discord_token_problem(token: str) -> str | None:
    """Why Discord would refuse ``token`` (a 401, which the start words as a token reset in the Developer
    Portal); None if it may take it. discord.py strips a token's ends (a line break from a file), not a
    "Bot " in front, which it adds itself: Discord is sent "Bot Bot …"."""
    token = token.strip()
    if re.match(r"(?i)bot\s", token):
        return 'write the token alone, without "Bot " in front: the gateway adds it'
    if re.search(r"\s", token):
        return "expected the token alone, as the Developer Portal gives it: a Discord token holds no space"
    return None


def _slack_token_rules(bot_token: str | None, app_token: str | None) -> list[str]:
    """The two Slack tokens, each in the other's key (Slack's own prefixes tell them apart); only the
    prefixes are shown. ``app_token`` None: not read (HTTP mode)."""
    errors = []
    if bot_token and bot_token.startswith("xapp-"):
        errors.append("platforms.slack.bot_token: holds an app-level token (xapp-…), which goes in"
                      " platforms.slack.app_token; the bot token is the Bot User OAuth Token (xoxb-…)")
    if app_token and app_token.startswith("xox"):
        errors.append("platforms.slack.app_token: holds an OAuth token (xox…), which goes in"
                      " platforms.slack.bot_token; Socket Mode needs the App-Level Token (xapp-…)")
    return errors


def _url_problem(url: str, *, example: str = "https://api.example.com") -> str | None:
    """Why ``url`` cannot be an API base URL, without echoing it (it may hold a token)."""
    if problem := _http_url_problem(url, example=example):
        return problem
    if _TOKEN_PATH.search(URL(url).path):
        return "give the server's base URL only, without /bot<token>: the token goes in platforms.telegram.token"
    return None


def _http_url_problem(url: str, *, example: str) -> str | None:
    """Why nothing can be POSTed to ``url``, without echoing it (it may hold a token)."""
    try:
        parsed = URL(url)
    except ValueError as exc:
        if "port" in str(exc).lower():  # yarl's words name the port, never the URL: it was taken for a bad scheme
            return f"expected an http(s) URL such as {example} (the port is not a number from 1 to 65535)"
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https"):
        return f"expected an http(s) URL such as {example} (the scheme is missing or wrong)"
    if not parsed.host:
        return f"expected an http(s) URL such as {example} (the host is missing)"
    return None
