"""What stopped a start, as one line an operator can act on: never a traceback, never a secret.

`explain` turns whatever a start raised into a line naming the key, file or URL to
fix. The exception and everything it was raised from or during are searched, most
telling first: a `StartupError`, `StoreError` or a journal a newer version wrote (already
phrased for the operator), a damaged lifecycle key table (with its file), then a platform
that would not start, then a state-database or file-system error. What
nothing here recognises is still one line: its type and message. Every line is
redacted (`gateway.logging.redact`), so a token inside a URL an SDK echoed is
``***``, and a platform's ``api_base`` is shown without its user info (`shown_url`), which
redacting alone would miss (a token given as the user name); the full traceback goes to the log at DEBUG.
"""

from __future__ import annotations

import errno
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from gateway.config import Config
from gateway.config.secret_values import shown_url, url_credentials
from gateway.errors import StartupError
from gateway.host import STATE_DB
from gateway.logging import redact
from gateway.preflight import describe_database_error
from gateway.store import StoreError
from lifecycle import JournalError

# Where each platform's credential and API location are set.
_CREDENTIALS = {"telegram": "token", "slack": "bot_token", "discord": "token"}
_SLACK_APP_TOKEN_METHOD = "apps.connections.open"
"""The one call Slack answers with the app token (Socket Mode's): every other is the bot token's."""
_API = {"telegram": "Telegram Bot API", "slack": "Slack Web API", "discord": "Discord API"}
_KEYED = re.compile(r"[a-z_]+(\.[A-Za-z0-9_\[\]-]+)+: ")  # a message that already names its key
_KEY_TABLE = "the lifecycle journal's handle key table (lifecycle_keys)"
"""How the lifecycle names its damaged key table (``lifecycle._capability._TABLE``), which it raises as a ValueError."""


def explain(exc: BaseException, config: Config) -> str:
    """One redacted line saying what stopped the start and what to fix."""
    chain = list(_chain(exc))
    for finder in (_startup, _key_table, _platform, _storage, _keyed):
        for error in chain:
            line = finder(error, config)
            if line is not None:
                return redact(line)
    return redact(f"could not start: {type(exc).__name__}: {exc} (the log at logging.level DEBUG has the details)")


def lasting(exc: BaseException) -> bool:
    """Whether what stopped the start stops every start until the operator changes something: a platform
    refused the bot (its token, a Slack bot token without ``chat:write``, or an ``api_base`` that is no
    such API, Discord's Message Content intent switched off); an extra the configuration needs
    is not installed; a `StartupError` its raiser marked ``lasting`` (a model key or URL no server could
    take, a worker on a file whose gateway sends it nothing); a `TemporalUnavailable` marked ``lasting`` (a
    ``lifecycle.temporal.tls`` file unreadable or without its certificate or key, an empty namespace: never an unreachable Temporal, nor a server certificate it may renew); the state database
    or the lifecycle journal was written by a newer version, which this one will never read; the journal's key
    table is damaged (a malformed row, or emptied beside records), which only a restore mends; the HTTP server
    may not listen on ``server.port`` (a `StartupError` marked ``lasting``). False for all
    else, which may mend by itself (a server not up yet, the network, a port still held, a full disk): a
    supervisor starting it again is right there, and wrong here, where it only repeated the same line every
    few seconds."""
    for error in _chain(exc):
        if getattr(error, "platform", None) in _CREDENTIALS and (
                _kind(error) in _REFUSALS or getattr(error, "lasting", False) is True):
            return True
        # Named, not imported: lifecycle.temporal needs the Temporal SDK, an extra. The gateway and the worker
        # wrap it in a StartupError of their own, which leaves it in the chain.
        if type(error).__name__ == "TemporalUnavailable" and getattr(error, "lasting", False) is True:
            return True
        if isinstance(error, StartupError) and (error.lasting or isinstance(error.__cause__, ImportError)):
            return True
        # A StoreError is a database this version cannot use as it is: one a newer version wrote.
        if isinstance(error, StoreError) or (isinstance(error, JournalError) and error.code == "JOURNAL_TOO_NEW"):
            return True
        if _damaged_key_table(error):
            return True
    return False


def failed_platform(exc: BaseException, config: Config) -> str | None:
    """The platform (``telegram``, ``slack`` or ``discord``) whose failure `explain`'s line names; None when the
    line names something else."""
    chain = list(_chain(exc))
    if any(finder(error, config) is not None for finder in (_startup, _key_table) for error in chain):
        return None  # said before a platform's failure
    return next((getattr(error, "platform", None) for error in chain if _platform(error, config) is not None), None)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, what it was raised from, and what it was raised while handling, each once."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        error = todo.pop(0)
        if id(error) in seen:
            continue
        seen.add(id(error))
        yield error
        todo += [e for e in (error.__cause__, error.__context__) if e is not None]
        if isinstance(error, BaseExceptionGroup):
            todo += list(error.exceptions)


def _startup(error: BaseException, config: Config) -> str | None:
    if isinstance(error, JournalError) and error.code == "JOURNAL_TOO_NEW":  # names the file and what to do
        return str(error)
    return str(error) if isinstance(error, (StartupError, StoreError)) else None


def _damaged_key_table(error: BaseException) -> bool:
    return isinstance(error, ValueError) and str(error).startswith(_KEY_TABLE)


def _key_table(error: BaseException, config: Config) -> str | None:
    """The lifecycle's words, with the file they are about (the journal lives in the state database)."""
    if not _damaged_key_table(error):
        return None
    line = f"{Path(config.state_dir) / STATE_DB}: {error}"
    return line if "restore" in line else f"{line}; restore the table from the same backup as the journal's records"


_REFUSALS = ("Unauthorized", "Forbidden", "NotFound", "BadRequest")
"""What a platform's API answers a bot whose credentials or ``api_base`` are wrong: the same at every start."""


def _kind(error: BaseException) -> str:
    """The name of the `platforms.base` error a platform's failure is: its class's, or the ``kind`` an adapter's
    own start error says (Discord's `DiscordStartError`)."""
    return getattr(error, "kind", None) or type(error).__name__


def _platform(error: BaseException, config: Config) -> str | None:
    platform = getattr(error, "platform", None)
    if platform not in _CREDENTIALS:
        return None
    api_base = getattr(config.platforms, platform).api_base
    detail = _unechoed(str(error) or type(error).__name__, api_base)
    kind = _kind(error)
    if kind == "NetworkError":
        return (f"platforms.{platform}.api_base: no working {_API[platform]} at {shown_url(api_base)} ({detail}); fix"
                f" platforms.{platform}.api_base, or the network or proxy between")
    if kind in _REFUSALS:
        credential = _CREDENTIALS[platform]
        if platform == "slack" and getattr(error, "method", None) == _SLACK_APP_TOKEN_METHOD:
            credential = "app_token"
        return (f"platforms.{platform}: {shown_url(api_base)} refused the bot ({detail}); check"
                f" platforms.{platform}.{credential} and platforms.{platform}.api_base")
    return f"platforms.{platform}: could not start ({detail}); check the platforms.{platform} settings"


def _unechoed(detail: str, api_base: str) -> str:
    """What the SDK said, without the credentials of ``api_base`` should it echo the URL (`url_credentials`:
    a proxy's password, or a token given as the user name alone, ``https://tok…@proxy/``), which `redact`
    knows only once the log's secrets are registered."""
    detail = detail.replace(api_base, shown_url(api_base))
    for form in sorted(url_credentials(api_base), key=len, reverse=True):
        detail = detail.replace(form, "***")
    return detail


def _storage(error: BaseException, config: Config) -> str | None:
    if isinstance(error, sqlite3.Error):
        return describe_database_error(Path(config.state_dir) / STATE_DB, error)
    if not isinstance(error, OSError) or error.errno is None:
        return None
    where = error.filename or config.state_dir
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{where}: no space left on its disk; free some space"
    if error.errno == errno.EROFS:
        return f"{where}: read-only file system; make it writable, or point state_dir at a writable directory"
    if error.errno in (errno.EACCES, errno.EPERM) and error.filename:
        return f"{where}: permission denied; give the gateway's user access, or change the setting that names it"
    if error.errno in (errno.EEXIST, errno.ENOTDIR, errno.EISDIR) and error.filename:
        return f"{where}: {error.strerror}; move it away, or change the setting that names it"
    return None


def _keyed(error: BaseException, config: Config) -> str | None:
    text = str(error)
    return text if isinstance(error, ValueError) and _KEYED.match(text) else None
