"""The documented example configuration, generated from the settings dataclasses so
it cannot drift from the code: `deploy/switchboard.example.yaml` is its output
(a test compares them; regenerate with ``python -m gateway.config.example``)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import yaml

from gateway.config.sections import Config

HEADER = """\
# Switchboard configuration: every key with its default.
# Copy to ./switchboard.yaml (or point --config / $SWITCHBOARD_CONFIG at it) and
# keep only what you change. ${VAR} and ${VAR:-default} read the environment,
# so tokens stay out of this file. See docs/configuration.md.
"""
EXAMPLES = {
    "delegation.model_map": (
        "fast:\n  description: Quick and cheap; for lookups and short summaries.\n  provider: openai\n"
        "  model: gpt-4o-mini\ndeep:\n  description: Careful reasoning for hard problems; slower.\n  provider: openai\n"
        "  model: o3\n  base_url: https://api.openai.com/v1\n  api_key: ${DEEP_API_KEY}"
    ),
    "delegation.profile_routes": (
        "reviewer:\n  description: Reviews a change for bugs and unclear code.\n  model: gpt-4o\n"
        "  system_prompt: You are a meticulous code reviewer.\n  context_files: [review-checklist.md]\n"
        "  toolsets: [file]"
    ),
    "display.platforms": "telegram:\n  interim_assistant_messages: false\n  long_running_notifications: generic",
    "platforms.webhook.routes": "alerts:\n  secret: ${ALERTS_WEBHOOK_SECRET}\n  deliver_url: https://example.com/hook",
}
_DYNAMIC = {"state_dir": "$SWITCHBOARD_STATE_DIR, else $XDG_STATE_HOME/switchboard, else ~/.local/state/switchboard"}


def render_example() -> str:
    lines = [HEADER]
    _section(Config(), "", 0, lines)
    return "\n".join(lines) + "\n"


def _section(obj: object, path: str, depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    for f in dataclasses.fields(obj):
        if f.metadata.get("internal"):
            continue
        key = f"{path}{f.name}"
        value = getattr(obj, f.name)
        doc = f.metadata.get("doc")
        if doc:
            lines.append(f"{pad}# {doc}")
        if dataclasses.is_dataclass(value):
            lines.append(f"{pad}{f.name}:")
            _section(value, f"{key}.", depth + 1, lines)
        elif key in EXAMPLES:
            lines.append(f"{pad}{f.name}: {{}}")
            lines.append(f"{pad}# for example:")
            lines.extend(f"{pad}#   {line}" for line in EXAMPLES[key].splitlines())
        elif key in _DYNAMIC:
            lines.append(f"{pad}# default: {_DYNAMIC[key]}")
            lines.append(f"{pad}# {f.name}: /var/lib/switchboard")
        else:
            lines.append(f"{pad}{f.name}: {_scalar(value)}")


def _scalar(value: object) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m gateway.config.example",
                                     description="Write the example configuration, every key with its default.")
    parser.add_argument("target", nargs="?", type=Path, default=Path("deploy/switchboard.example.yaml"),
                        help="where to write it (default: %(default)s)")
    parser.parse_args().target.write_text(render_example(), encoding="utf-8")
