"""The deployment files in deploy/ agree with each other and with the code they deploy."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from gateway.commands import BUILTIN

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def test_every_volume_a_switchboard_container_writes_to_belongs_to_its_user():
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    user = re.search(r"^USER (\S+)$", dockerfile, re.M).group(1)
    # A new named volume takes the owner of the directory it is mounted on, root where the image has none.
    owned = set(re.findall(rf"--home (\S+) --create-home {user}\b", dockerfile))
    for paths in re.findall(rf"install -d -o {user} -g {user} ([^\n\\]+)", dockerfile):
        owned.update(paths.split())
    compose = yaml.safe_load((DEPLOY / "compose.scale-out.yaml").read_text(encoding="utf-8"))
    for name, service in compose["services"].items():
        if service["build"]["dockerfile"] != "deploy/Dockerfile" or "user" in service:
            continue
        for mount in service["volumes"]:
            source, target, *mode = mount.split(":")
            if source in compose["volumes"] and mode != ["ro"]:
                assert target in owned, f"{name} writes to {target}, which the image does not give to {user}"


def test_the_slack_manifest_declares_every_command_the_gateway_serves():
    # Slack refuses a slash command the app does not declare before it reaches the gateway.
    manifest = yaml.safe_load((DEPLOY / "slack-app-manifest.yaml").read_text(encoding="utf-8"))
    declared = [command["command"] for command in manifest["features"]["slash_commands"]]
    assert declared == [f"/{command.name}" for command in BUILTIN]
