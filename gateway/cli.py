"""The ``switchboard`` command line. Errors become user-facing text here, and only here.

Whatever stops a command is one line on stderr naming what to fix: configuration errors (one line each,
then the configuration's warnings), or start-up problems (`gateway.startup_errors`). The exit status says
whether starting again can help: `EXIT_CONFIG` when it cannot, 1 otherwise. Tracebacks go to the log at
DEBUG only, redacted.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import contextlib
import dataclasses
import logging
import os
import re
import shlex
import signal
import sqlite3
import stat
import sys
from collections.abc import Coroutine, Sequence
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any, TextIO, TypeVar

from gateway import inbox_cli, left_behind, preflight, state_lock
from gateway.config import Config, ConfigError, config_check, config_secrets, load_config
from gateway.config.check import write_problems
from gateway.config.loader import unread_secrets_of
from gateway.config.overrides import only_with_set
from gateway.config.sections import DisplayOverrides
from gateway.config.worker_reads import ASK_NOT_READ, reads_key, unread_set_problems
from gateway.early_signals import lost_stop
from gateway.errors import StartupError
from gateway.host import STATE_DB, AgentHost
from gateway.inbox_cli import inbox_command
from gateway.logging import logging_installed
from gateway.process_exit import end_process_now
from gateway.replies import CUT_OFF_UNSAID, EMPTY_ANSWER, operator_hint, reply_text
from gateway.serve import serve
from gateway.startup_errors import explain, lasting
from gateway.store import StoreError, row_id
from platforms.base import scalar_text
from platforms.formatting.blank import is_blank
from platforms.local_input import PIPE_ENCODING
from platforms.local_screen import printable, shown

log = logging.getLogger("gateway.cli")

CHAT_LOG = "chat.log"
"""Where `switchboard chat` logs, inside the state directory, unless --verbose."""
CHAT_LOG_CAP = 10 * 1024 * 1024
"""Bytes past which `switchboard chat` sets its log aside as ``chat.log.1`` when it starts."""
ASK_INPUT_LIMIT = 4 * 1024 * 1024
"""Bytes `ask` takes from a pipe or a file on its standard input: more than a million tokens, past any model's
context. Read whole without a bound, ``yes | switchboard ask …`` held the machine's memory until it ran out."""


EXIT_CONFIG = 78
"""Exit status of a command that the operator must fix something for before it can start: the configuration
has errors, a platform refused the bot, an extra is missing, the model's key or URL is malformed, the state
database or journal is a newer version's, the journal's handle-key table is damaged, a tool or toolset name
no tool has, a worker's file has no temporal engine, a ``server.port`` the user may not listen on, a
``lifecycle.temporal.tls`` file cannot be read or used (`gateway.startup_errors.lasting`; sysexits.h's
``EX_CONFIG``). Starting again unchanged
fails the same way, so deploy/switchboard.service names it in
``RestartPreventExitStatus=``: a supervisor restarting on every failure logged the same line every few seconds
for ever. Any other failure exits 1, and is restarted: a crash, or a start stopped by what may come back by
itself (the model server, Temporal, a platform's API, the port or the state directory still held by a process
on its way out, a state directory not mounted yet: issue 14 names status 1 for the state directory's and the
port's problems)."""


SET_LEVELS = ("set", "set_in_command", "set_in_subcommand")
"""Where each level of the command line keeps its --set pairs: argparse copies a subcommand's
options over its parent's, so one list for all kept only the innermost level's pairs."""
CONFIG_LEVELS = ("config", "config_in_command", "config_in_subcommand")
"""Where each level of the command line keeps its --config, for the same reason: one for all kept the
innermost level's, so `switchboard --config A run --config B` read B without a word (`_config_path`). Each
level keeps every --config given there: argparse keeps the last, so `--config A --config B run` (an alias that
adds `--config A`, and another typed before the command) read B without a word too."""


def _common(level: int) -> argparse.ArgumentParser:
    """The global options, as a command (1) or subcommand (2) also takes them after its name
    (`switchboard run --config F`); SUPPRESS keeps an option given before it from being reset."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="PATH", action="append", default=argparse.SUPPRESS, type=_named_path,
                        dest=CONFIG_LEVELS[level], help="configuration file (default: see docs/configuration.md)")
    common.add_argument("--set", metavar="KEY=VALUE", action="append", default=argparse.SUPPRESS,
                        dest=SET_LEVELS[level],
                        help="set one setting over the file, e.g. server.port=9000 (repeatable; not for secrets)")
    return common


def _named_path(text: str) -> str:
    # `--config "$CFG"` with CFG unset would otherwise read some other file, or the defaults, unsaid.
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file (leave it out for the usual lookup)")
    return text


def build_parser() -> argparse.ArgumentParser:
    common, common_inner = _common(1), _common(2)
    parser = argparse.ArgumentParser(prog="switchboard", description="A chat gateway for an agent that delegates.")
    parser.add_argument("--config", metavar="PATH", action="append", default=[], type=_named_path,
                        help="configuration file (default: see docs/configuration.md)")
    parser.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                        help="set one setting over the file, e.g. server.port=9000 (repeatable; not for secrets)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ask = _add(commands, "ask", common, "run one agent turn and print the reply")
    ask.add_argument("message", nargs="+", action=_Message,
                     help="what to ask; what a pipe or a file on standard input holds is added under it")
    ask.set_defaults(ask_parser=ask)  # its usage mistakes found past parsing are told with its usage line
    chat = _add(commands, "chat", common, "talk to the agent in this terminal (the gateway with the local platform)")
    chat.add_argument("--verbose", action="store_true",
                      help=f"print the log here instead of writing it to <state_dir>/{CHAT_LOG}")
    _add(commands, "run", common, "run the gateway: HTTP server and every enabled platform")
    _add(commands, "worker", common, "run children for a gateway with lifecycle.engine: temporal (docs/scale-out.md)")
    config = _add(commands, "config", common, "configuration tools")
    config_commands = config.add_subparsers(dest="config_command", required=True, metavar="SUBCOMMAND")
    check = _add(config_commands, "check", common_inner, "validate a config file and print the effective configuration")
    # PATH, as the README and the usage error naming two files (`_checked_path`) call it.
    check.add_argument("path", nargs="?", type=_named_path, metavar="PATH",
                       help="file to check (default: the usual lookup)")
    inbox = _add(commands, "inbox", common, "events the gateway could not handle")
    inbox_commands = inbox.add_subparsers(dest="inbox_command", required=True, metavar="SUBCOMMAND")
    _add(inbox_commands, "dead", common_inner, "list the dead letters")
    retry = _add(inbox_commands, "retry", common_inner, "hand a dead letter back to the gateway")
    dismiss = _add(inbox_commands, "dismiss", common_inner, "forget a dead letter: its event will not be handled")
    for letter_command in (retry, dismiss):
        letter_command.add_argument("letter_id", type=_letter_id, metavar="ID",
                                    help="the dead letter's id, as `inbox dead` lists it")
    return parser


def _add(commands: Any, name: str, common: argparse.ArgumentParser, what: str) -> argparse.ArgumentParser:
    """A command whose own ``--help`` says what it does, as the list of commands does: with ``help`` alone,
    `switchboard run --help` showed its options and not a word of what it runs."""
    return commands.add_parser(name, parents=[common], help=what, description=f"{what[0].upper()}{what[1:]}.")


class _Message(argparse.Action):
    """`ask`'s message, refused when blank as ask's own usage mistake, with ask's usage line, as a message left
    out is: `switchboard ask "$QUESTION"` with the variable unset sent the model (a call paid for) nothing."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if not " ".join(values).strip():
            parser.error("the message is empty")
        setattr(namespace, self.dest, values)


def _letter_id(text: str) -> int:
    """A dead letter's id as typed. argparse names a type's failure by the function's name: `row_id`'s
    told the operator ``invalid row_id value: 'abc'``, a parameter of ours, not what an id is."""
    try:
        return row_id(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a dead letter id: ids are the numbers"
                                         " `switchboard inbox dead` lists") from None


UNENCODABLE = "switchboard.unencodable"
"""Standard output's error handler (`_unencodable`)."""


def _unencodable(error: UnicodeError) -> tuple[str | bytes, int]:
    """How standard output writes a character its encoding lacks: as ``?``, but a byte an argument held that
    the locale could not decode (a lone surrogate U+DC80 to U+DCFF, ``surrogateescape``'s) as that byte. Python's
    own handler is strict (``surrogateescape`` in the C locale): in a Latin-1 or ASCII locale one em dash or
    emoji in a dead letter or a setting ended `inbox dead` and `config check` in a traceback, and in a UTF-8 one
    a state directory given as bytes that are not UTF-8 ended `switchboard chat` at its first line."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    c = error.object[error.start]
    return (bytes([ord(c) - 0xDC00]) if "\udc80" <= c <= "\udcff" else "?"), error.start + 1


codecs.register_error(UNENCODABLE, _unencodable)


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdin is None:  # started with it closed (`<&-`): no input, as from /dev/null
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's for good
    with contextlib.suppress(AttributeError, ValueError):  # closed (None, handled below), or no text stream
        sys.stdout.reconfigure(errors=UNENCODABLE)
    try:
        return _command(argv)
    except BrokenPipeError:  # amid a listing or the effective configuration: what was asked is done
        _reader_gone()
        return 0
    finally:
        _flush_output()


def _flush_output() -> None:
    """Standard output flushed here, where a reader that went away is still ours to handle: at exit, Python's
    own flush said "Exception ignored … BrokenPipeError" and made the status 120 (`switchboard --help | true`).
    After a command's last line only, so the command's own status stands: `switchboard config check | head -1`
    exited 1, which says the configuration has errors, and `ask` whose turn ended early still exits 1."""
    if sys.stdout is None:  # closed at start, and refused by `_command`
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _reader_gone()


def _reader_gone() -> None:
    """The reader of standard output stopped early (`| head -1`, `less` quit): as for a Unix tool, no failure,
    and nothing to tell it about. What is left to write goes to /dev/null, so that it fails no more."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


def _command(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.config = _config_path(parser, args)
    if sys.stdout is None:  # started with it closed (`>&-`)
        if args.command in ("ask", "chat"):  # what they print is the point: nothing is sent unseen
            print(f"switchboard: {args.command} needs its standard output, which is closed", file=_STDERR)
            return 1
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's for good
    args.set = [pair for level in SET_LEVELS for pair in getattr(args, level, [])]  # in the order written
    if args.command == "ask":  # read before the state directory is held: a slow pipe must not keep it from others
        try:
            args.piped = _piped_input(args.ask_parser)
        except OSError as exc:
            print(f"switchboard: cannot read the standard input ({exc.strerror or exc})", file=_STDERR)
            return 1
    if args.command == "config":
        return config_check(_checked_path(parser, args), sys.stdout, _STDERR, overrides=args.set)
    unread = _unread_sets(args)
    try:
        # A worker serves no chat: the platforms' secrets stay on the gateway's machine (docs/scale-out.md).
        config, warnings = load_config(args.config, overrides=args.set, worker=args.command == "worker")
    except ConfigError as exc:
        exc.warnings += _unread_not_refused(unread, exc.errors)
        write_problems(exc, _STDERR)
        print(f"switchboard: the configuration has errors; {_check_hint(exc.source, args.set)} shows them all",
              file=_STDERR)
        return EXIT_CONFIG
    warnings = [*warnings, *unread]
    if args.command == "inbox":  # also while a gateway runs: it reads and writes the database only
        _print_warnings(warnings)
        try:
            return inbox_command(config, args.inbox_command, getattr(args, "letter_id", None), sys.stdout, _STDERR)
        except BrokenPipeError:  # the reader of its lines went away (`inbox dead | head`): no database's fault
            raise
        except (sqlite3.Error, OSError, StoreError) as exc:  # a database it cannot use: name it, as a start would
            log.debug("the inbox command failed", exc_info=exc)
            print(f"switchboard: {explain(exc, config)}", file=_STDERR)
            return EXIT_CONFIG if lasting(exc) else 1  # a database a newer version wrote, as a start would
    try:
        if args.command != "worker":  # a worker keeps no state: any number may run anywhere
            _claim_state_dir(config)
        log_file = _chat_log(config) if args.command == "chat" and not args.verbose else None
    except StartupError as exc:  # one that may mend by itself (the lock's holder ends, the disk is remounted): 1
        print(f"switchboard: {exc}", file=_STDERR)
        return 1
    secrets = config_secrets(config)
    if args.command == "worker":  # the gateway's secrets it holds, unread, masked all the same
        secrets += unread_secrets_of(config.source, args.set)
    try:
        with logging_installed(_log_level(args.command, config.logging.level), config.logging.format,
                               log_file or sys.stderr, secrets=secrets,
                               repeat_window=config.logging.repeat_window_seconds):
            return _run(args, config, warnings)
    finally:
        if log_file is not None:
            with contextlib.suppress(OSError):  # its last lines may not fit a full disk: said once already
                log_file.close()


def _log_level(command: str, level: str) -> str:
    """The lowest level ``command`` logs at. `ask` prints one answer: its INFO lines (the start's ``switchboard 0.1.0:
    state in …``) are no part of it, and on stderr a script took them for a problem. It logs what an operator must
    see (WARNING and above), or all that DEBUG asks for."""
    return "WARNING" if command == "ask" and level == "INFO" else level


def _unread_sets(args: argparse.Namespace) -> list[str]:
    """The warnings of the --set pairs `ask` or `inbox` does not read, as a worker warns of its own
    (`gateway.config.worker_reads.unread_set_problems`): ``inbox dead --set server.port=9000`` or ``ask --set
    display.busy_input_mode=queue`` changed nothing without a word, its operator taking it for done. An unknown key
    among them is already the whole file's check's error, not told twice."""
    if args.command == "ask":
        reads, not_read = reads_key, ASK_NOT_READ
    elif args.command == "inbox":
        reads, not_read = partial(inbox_cli.reads_key, args.inbox_command), inbox_cli.not_read(args.inbox_command)
    else:
        return []
    try:
        return unread_set_problems(args.set, reads, not_read)[1]
    except ConfigError:  # a pair that is not KEY=VALUE: the load's error, which names it, is all there is to say
        return []


def _unread_not_refused(unread: Sequence[str], errors: Sequence[str]) -> list[str]:
    """The warnings of `_unread_sets` but those of a key an error is about (its value refused: ``--set
    server.port=abc``, an unset ``${VAR}``) or comes only with (``--set server.host=0.0.0.0``, the console's token
    then required): the command ended with status 78 for it, and told beside that it "changes nothing here", its
    operator could not tell whether to mend the value or drop the pair."""
    named = set()
    for error in errors:
        named.update(error.removeprefix("--set ").partition(": ")[0].split(" and --set "))
        if only_with_set(error):
            named.update(re.split(r" (?:and|or) --set ", error.rpartition(" (only with --set ")[2].removesuffix(")")))

    def refused(key: str) -> bool:
        return any(about == key or about.startswith(f"{key}.") for about in named)

    return [line for line in unread if not refused(line.removeprefix("--set ").partition(": ")[0])]


def _config_path(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The file --config names, before the command or after it. Two of them naming different files, at one
    level or two, is a usage error: the last was read, and the command's outcome taken for the other's (an alias
    or a script that adds --config to every command, and another --config typed after it)."""
    given = [path for level in CONFIG_LEVELS for path in getattr(args, level, [])]  # in the order written
    for other in given[1:]:
        if not _same_file(given[0], other):
            parser.error(f"--config {shlex.quote(given[0])} and --config {shlex.quote(other)} name different files;"
                         " give one of them")
    return given[-1] if given else None


def _checked_path(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """The file `config check` reads: its PATH, or --config's. Both, naming different files, is a usage error:
    the check read PATH alone, and its verdict was taken for the --config file's (an alias or a script that
    adds --config to every command)."""
    if args.path is not None and args.config is not None and not _same_file(args.config, args.path):
        parser.error(f"config check: --config {shlex.quote(args.config)} and PATH {shlex.quote(args.path)}"
                     " name different files; give one of them")
    return args.path or args.config


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(os.path.expanduser(first), os.path.expanduser(second))
    except OSError:  # one is not there (the check says so) or cannot be reached: by their names
        return os.path.abspath(os.path.expanduser(first)) == os.path.abspath(os.path.expanduser(second))


SERVICE_ENVIRONMENT = "the service's user and environment (docs/configuration.md#checking-a-services-configuration)"
"""What a check typed in a shell lacks of a systemd service's: its EnvironmentFile's secrets, reported as
"environment variable … is not set" by a check without them, and its user, who may not read what root can."""


def _check_hint(source: Path | None, overrides: Sequence[str]) -> str:
    """The `config check` that reads what the command read. A bare one looks the file up anew: after
    ``--config /etc/switchboard/config.yaml run`` (the systemd unit's), typed in another directory or as
    another user, it checked the defaults or another file and found nothing wrong. The --set pairs are not
    repeated: a value may be a secret typed there all the same. Nor can a systemd service's environment be: its
    EnvironmentFile is the unit's, which the process is not told."""
    command = "switchboard config check" + (f" {shlex.quote(str(source))}" if source is not None else "")
    given = ["the same --set options"] if overrides else []
    if _stderr_is_the_journal():
        given.append(SERVICE_ENVIRONMENT)
    return f"`{command}`" + (f", with {' and '.join(given)}," if given else "")


def _stderr_is_the_journal() -> bool:
    """Whether this command runs as a systemd service: its standard error is the stream to the journal that
    ``$JOURNAL_STREAM`` names (device:inode). The variable alone is no sign: what a service starts inherits it
    (a desktop's terminals, a CI runner's jobs)."""
    device, _, inode = os.environ.get("JOURNAL_STREAM", "").partition(":")
    try:
        status = os.fstat(sys.stderr.fileno())
        return (status.st_dev, status.st_ino) == (int(device), int(inode))
    except (AttributeError, OSError, ValueError):  # no stderr, or none with a descriptor; no such variable
        return False


def _print_warnings(warnings: Sequence[str]) -> None:
    for line in warnings:
        print(f"warning: {line}", file=_STDERR)


def _run(args: argparse.Namespace, config: Config, warnings: Sequence[str]) -> int:
    _print_warnings(warnings)
    if args.command == "ask":
        # Bytes of the arguments that are not UTF-8 arrive as lone surrogates, which nothing
        # downstream can encode: U+FFFD instead, as for bytes typed into the chat.
        message = " ".join(args.message) + (f"\n\n{args.piped}" if args.piped else "")
        runner = _ask(config, scalar_text(message))
    elif args.command == "worker":
        runner = _worker(config)
    elif args.command == "chat" and not _typed_at(sys.stdin):
        runner = _serve(_queued_chat(config), local=True)
    else:
        runner = _serve(config, local=args.command == "chat")
    return _run_to_end(runner, config)


def _piped_input(parser: argparse.ArgumentParser) -> str:
    """What a pipe, a file or a socket on standard input holds, for `ask` to add to its message (``cat app.log |
    switchboard ask summarise``); "" from a terminal, ``/dev/null``, or a stream with no descriptor (a test's).
    Ignored, the model was asked about nothing and its answer came with status 0. Decoded as the chat decodes a
    pipe (`platforms.local_input.PIPE_ENCODING`), a byte that is not UTF-8 as U+FFFD. More than `ASK_INPUT_LIMIT`
    bytes is a usage mistake."""
    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return ""
    if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)):
        return ""
    os.set_blocking(fd, True)  # left non-blocking by whatever ran before, a read of a pipe not yet written is None
    data = sys.stdin.buffer.read(ASK_INPUT_LIMIT + 1)
    if len(data) > ASK_INPUT_LIMIT:
        parser.error(f"the standard input holds more than {ASK_INPUT_LIMIT // 2**20} MiB; pipe in the part to ask"
                     " about (`tail -n 2000 app.log | switchboard ask …`)")
    text = data.decode(PIPE_ENCODING, "replace")
    return "" if is_blank(text) else text


def _typed_at(stream: TextIO | None) -> bool:
    """Whether ``stream`` is a terminal, which a person types at: not a pipe, a file, or closed."""
    try:
        return stream is not None and stream.isatty()
    except ValueError:  # a closed stream
        return False


def _queued_chat(config: Config) -> Config:
    """``config`` for a chat whose input is a pipe or a file: each of its messages waits for the turn before it
    (``busy_input_mode: queue``), whatever ``display.busy_input_mode`` says. Nobody at a pipe means a line as
    "stop that, answer this" (``interrupt``) or as more for the running turn (``steer``): a script of questions,
    a slow generator, ``tail -f``, expects each line answered, in order. Interrupted, the turn before was stopped
    and its answer lost without a word; steered, a line got no answer of its own. ``/stop`` still stops."""
    local = config.display.platforms.get("local") or DisplayOverrides()
    queued = dataclasses.replace(local, busy_input_mode="queue")
    platforms = MappingProxyType({**config.display.platforms, "local": queued})
    return dataclasses.replace(config, display=dataclasses.replace(config.display, platforms=platforms))


def _run_to_end(main: Coroutine[Any, Any, int], config: Config) -> int:
    """`asyncio.run`, but the tasks still running when ``main`` has returned get a bounded time to end
    (`left_behind.end_the_rest`): one that ignores its cancellation would hold the process for ever.
    If any does, the process ends at once with the command's status, without Python's clean-up.
    So after a SystemExit, which leaves the loop wherever it lands: a stop signal's before the command set its
    own handlers (`gateway.early_signals`), where the runner's clean-up waited for ever on a plugin's
    ``register`` that ignores its cancellation, or a library's or plugin's ``sys.exit()``, which ends the
    command as Python would (its message said, status 1); ``main``, cancelled, first ends as it would (`ask`
    closes its host) within the shutdown grace. After a stop's SIGINT handling, SIGINT is ignored from the
    loop's close on (`_closing`)."""
    exited = False
    with asyncio.Runner() as runner:
        try:
            status = runner.run(main)
        except KeyboardInterrupt:
            status = 130
        except SystemExit as stop:
            status, exited = _exit_status(stop.code), True
        except Exception as exc:  # the one boundary where a failure becomes words for the operator
            log.debug("the command failed", exc_info=exc)
            # A stop signal's SystemExit made into another error (Python 3.11 wraps one raised in a class
            # body's ``__set_name__``, as the worker imports the Temporal SDK, in a RuntimeError): no failure.
            status = lost_stop()
            if status is None:
                status = EXIT_CONFIG if lasting(exc) else 1
                _tell(f"switchboard: {explain(exc, config)}")
        try:
            if exited:
                _run_through(runner, _unwound(main, config.server.shutdown_grace_seconds))
            stuck = _run_through(runner, left_behind.end_the_rest())
            _closing(runner.get_loop())
        except (KeyboardInterrupt, SystemExit):  # a signal again while those are given their time: no more waiting
            stuck = True
        if stuck:
            end_process_now(status)
    return status


_T = TypeVar("_T")


def _run_through(runner: asyncio.Runner, coro: Coroutine[Any, Any, _T]) -> _T:
    """``coro`` run on ``runner``'s loop to its end. A stop left in the loop's queue by the run before (its end's,
    a SIGINT's KeyboardInterrupt raised in the same pass of the loop before it ran) ended the next run at once:
    "Event loop stopped before Future completed", a traceback and status 1 for a chat a burst of SIGINTs ended."""
    loop = runner.get_loop()
    task = loop.create_task(coro)
    while True:
        try:
            return loop.run_until_complete(task)
        except RuntimeError:
            if task.done():  # its own
                raise


def _closing(loop: asyncio.AbstractEventLoop) -> None:
    """Where the loop handles SIGINT (a stop's, `gateway.stop_signals`, or the terminal chat's), SIGINT is ignored
    from here to the end of the process: the command is over. The loop's close would set Python's default again,
    and one more of a burst of SIGINTs (a held key, an IDE sending several) then raised its KeyboardInterrupt
    part-way through the close, a finalizer or the interpreter's exit, with a traceback, or killed the process
    (status -2, not 130). Raises a KeyboardInterrupt that came in between."""
    if loop.remove_signal_handler(signal.SIGINT):
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _exit_status(code: object) -> int:
    """The status Python's own exit gives ``SystemExit(code)``, its message said now as Python says it."""
    if code is None or isinstance(code, int):
        return code or 0
    _tell(str(code))
    return 1


def _tell(line: str) -> None:
    """``line`` on standard error, where the operator reads why the command failed (`_STDERR`)."""
    print(line, file=_STDERR)


class _Stderr:
    """Standard error for the lines the command writes itself (problems, warnings, why it failed): a line its
    reader cannot take (gone: `run 2>&1 | tee log`, the tee killed) is unsaid, and the command's status stands.
    Raised, the BrokenPipeError reached `main`, which takes it for standard output's reader gone and ends with
    status 0: a configuration with errors passed `config check 2>&1 | head -1`, and a gateway that failed to
    start passed for one stopped as asked, which a supervisor (systemd's ``Restart=on-failure``, Docker's
    ``on-failure``) does not start again. Looked up at each write: a test may swap ``sys.stderr``."""

    def write(self, text: str) -> int:
        with contextlib.suppress(BrokenPipeError):
            sys.stderr.write(text)
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            sys.stderr.flush()


_STDERR: Any = _Stderr()


async def _unwound(main: Coroutine[Any, Any, int], grace: float) -> None:
    """``main``'s task, if still running, cancelled and given ``grace`` to end (its host's stop takes up to it)."""
    for task in asyncio.all_tasks():
        if task.get_coro() is main:
            await left_behind.cancel_within([task], grace + left_behind.STUCK_WAIT_SECONDS)


def _claim_state_dir(config: Config) -> None:
    """The state directory is usable and ours alone, before anything opens it. The lock comes before the
    database's check: a second start on the directory of a running gateway read all of its database first
    (about a second per GB), and what that check found, it blamed on the file, telling the operator to move
    the running gateway's database or ``-wal`` away, instead of naming the gateway that holds them."""
    workspace = Path(config.agent.workspace) if config.agent.workspace else None
    preflight.check_state_dir(config.state_dir, workspace, database=False)
    state_lock.hold(config.state_dir)
    preflight.check_database(Path(config.state_dir).absolute() / STATE_DB)


def _chat_log(config: Config) -> TextIO:
    """Where `switchboard chat` logs: a file in the state directory, so no log line crosses
    the prompt. Says where, first thing."""
    path = Path(config.state_dir).absolute() / CHAT_LOG
    try:
        if path.exists() and path.stat().st_size > CHAT_LOG_CAP:  # one earlier log is kept, whole
            os.replace(path, path.with_name(f"{CHAT_LOG}.1"))
        # 0600, as the rest of the state directory: the log is the gateway's user's alone.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        # Escaped as stderr escapes it, what UTF-8 cannot hold (a lone surrogate in a model's error): strict, the
        # line was lost and a "--- Logging error ---" traceback printed over the chat.
        stream = os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace", buffering=1)  # closed by main
    except OSError as exc:
        raise StartupError(f"cannot write the chat log {path} ({exc.strerror}); fix its permissions, or run"
                           " `switchboard chat --verbose` to log here instead") from exc
    # With the output redirected and a terminal on stderr (`switchboard chat > out.txt`), the line is for the person
    # at the terminal, as the prompts are (`platforms.local`): in the file, it came first, before the replies.
    aside = not _typed_at(sys.stdout) and _typed_at(sys.stderr)
    print(f"(logs go to {path}; `switchboard chat --verbose` prints them here)", file=_STDERR if aside else sys.stdout)
    return stream


async def _serve(config: Config, *, local: bool) -> int:
    await preflight.check_model(config.model)
    return await serve(config, local=local)


async def _worker(config: Config) -> int:
    from gateway.worker import run_worker  # imports the Temporal SDK: only for this command

    await preflight.check_model(config.model)
    return await run_worker(config)


async def _ask(config: Config, message: str) -> int:
    await preflight.check_model(config.model)
    host = AgentHost(config)
    try:
        await host.start()  # one that fails after the lifecycle started (a plugin missing) closes it too
        # Through `delegation.backend`, as a chat's new session delegates (the registry's tool is `default`'s).
        delegate = host.inline_delegate(config.delegation.backend)
        result = await host.new_session(delegate=delegate).run_turn(message)
    finally:
        # Its background children are stopped, and get the grace to end, as at a gateway's stop.
        await host.close(grace=config.server.shutdown_grace_seconds)
    completed = result.exit_reason == "completed"
    if completed and is_blank(result.text):  # nothing a script could take for the answer: a failure, said why
        unsaid = CUT_OFF_UNSAID if result.truncated else EMPTY_ANSWER
        print(_for_screen(sys.stderr, f"switchboard: {unsaid.strip('()')}"), file=_STDERR)
        return 1
    # A completed answer as the chat reads it: with the note on an answer cut off at the output limit or withheld
    # in part by the content filter, which otherwise reads as the whole answer (`reply_text`).
    text = reply_text("reply", result) if completed else result.text
    if text:
        try:
            print(_for_screen(sys.stdout, scalar_text(text)))  # a model can emit a lone surrogate too
        except BrokenPipeError:  # `| head -c 60`: no failure to start, and a turn that ended early still says so
            _reader_gone()
    if not completed:
        print(_for_screen(sys.stderr, f"switchboard: the turn ended early ({result.exit_reason}): "
                                      f"{result.error or ''}".rstrip(": ") + operator_hint(result.error_kind)),
              file=sys.stderr)
        return 1
    return 0


def _for_screen(stream: TextIO, text: str) -> str:
    """``text`` with its control characters shown instead of obeyed when ``stream`` is a terminal, as the chat
    prints (`platforms.local_screen.shown`): a reply quoting a web page or a file, or a model server's error,
    can hold escape sequences that clear the screen, retitle the window or write the clipboard. To a pipe or a
    file, as written: what reads it gets the model's text. Either way in characters ``stream``'s encoding has
    (a terminal's as the chat prints, `printable`; a pipe's with ``?`` for what it lacks): with
    ``PYTHONIOENCODING=latin-1`` or a Latin-1 locale, a reply with one curly quote or emoji raised
    UnicodeEncodeError, and the reply, paid for, was lost behind "could not start"."""
    encoding = getattr(stream, "encoding", None)
    try:
        on_terminal = stream.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        on_terminal = False
    if on_terminal:
        return printable(shown(text), encoding)
    try:
        return text.encode(encoding, "replace").decode(encoding) if encoding else text
    except LookupError:  # an encoding Python does not know could not have been set on the stream: as it is
        return text


if __name__ == "__main__":
    from gateway.process_exit import exit_process

    try:
        status = main()
    except KeyboardInterrupt:  # a SIGINT again once the command's loop has closed, as `gateway.entry` takes it
        status = 130
    exit_process(status)
