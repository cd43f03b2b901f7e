"""The ``switchboard`` command line. Errors become user-facing text here, and only here."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from gateway.config import ConfigError, config_check, config_secrets, load_config
from gateway.logging import setup_logging
from gateway.process import serve
from gateway.runtime import Runtime

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="switchboard", description="A chat gateway for an agent that delegates.")
    parser.add_argument("--config", metavar="PATH", help="configuration file (default: see docs/configuration.md)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ask = commands.add_parser("ask", help="run one agent turn and print the reply")
    ask.add_argument("message", nargs="+", help="what to ask")
    commands.add_parser("chat", help="talk to the agent in this terminal (the gateway with the local platform)")
    commands.add_parser("run", help="run the gateway: HTTP server and every enabled platform")
    config = commands.add_parser("config", help="configuration tools")
    config_commands = config.add_subparsers(dest="config_command", required=True, metavar="SUBCOMMAND")
    check = config_commands.add_parser("check", help="validate a config file and print the effective configuration")
    check.add_argument("path", nargs="?", help="file to check (default: the usual lookup)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "config":
        return config_check(args.path or args.config, sys.stdout, sys.stderr)
    try:
        config, warnings = load_config(args.config)
    except ConfigError as exc:
        for line in exc.errors:
            print(f"error: {line}", file=sys.stderr)
        print("switchboard: the configuration has errors; `switchboard config check` shows them all", file=sys.stderr)
        return 1
    setup_logging(config.logging.level, config.logging.format, sys.stderr, secrets=config_secrets(config),
                  repeat_window=config.logging.repeat_window_seconds)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    if args.command == "ask":
        runner = _ask(config, " ".join(args.message))
    else:
        runner = serve(config, local=args.command == "chat")
    try:
        return asyncio.run(runner)
    except KeyboardInterrupt:
        return 130


async def _ask(config, message: str) -> int:
    runtime = Runtime(config)
    await runtime.start()
    try:
        result = await runtime.new_session().run_turn(message)
    finally:
        await runtime.close()
    if result.text:
        print(result.text)
    if result.exit_reason != "completed":
        print(f"switchboard: the turn ended early ({result.exit_reason}): {result.error or ''}".rstrip(": "),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
