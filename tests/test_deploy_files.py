"""What deploy/ grants and how it stops, against the code it deploys: the Slack app manifest's scopes and events
against the adapter's calls and handlers, the systemd unit's kill and restart settings against the gateway, and the
state directory each deployment gives the gateway against the one it keeps."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from gateway.cli import SERVICE_ENVIRONMENT
from platforms import slack_membership, slack_scopes
from platforms.fakes._slack_web_api import BOT_SCOPES
from tests.test_deploy import switchboard, unit_setting

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = yaml.safe_load((ROOT / "deploy" / "slack-app-manifest.yaml").read_text(encoding="utf-8"))
SLACK = sorted((ROOT / "platforms").glob("slack*.py"))

HISTORY = {"channels:history", "groups:history", "im:history", "mpim:history"}
NEEDS = {
    # Slack's reference (docs.slack.dev/reference/methods/<method>): the bot scopes each method the adapter calls
    # takes. A method the adapter starts calling fails the test below until it is added here, and its scope to
    # the manifest.
    "auth.test": set(),
    "apps.connections.open": set(),  # the app-level token's connections:write (docs/platforms/slack.md), no bot scope
    "chat.postMessage": {"chat:write"},
    "chat.update": {"chat:write"},
    "chat.delete": {"chat:write"},
    "chat.postEphemeral": {"chat:write"},
    "conversations.history": HISTORY,  # each conversation kind its own: the catch-up reads all four
    "conversations.replies": HISTORY,
    "files.info": {"files:read"},  # and the download of its url_private
    "files.getUploadURLExternal": {"files:write"},
    "files.completeUploadExternal": {"files:write"},
    "users.info": {"users:read"},  # the handles of the users a message mentions (platforms.slack_names)
}
SLASH_COMMANDS = "commands"
MEMBERSHIP = {"channels:read", "groups:read"}
"""What Slack's events about the bot's channels (`platforms.slack_membership.EVENTS`) need, public and private."""
_FAMILIES = ("apps|assistant|auth|bookmarks|bots|chat|conversations|dnd|emoji|files|pins|reactions|reminders|search"
             "|stars|team|usergroups|users|views")


def methods_called() -> set[str]:
    """The Web API methods the adapter's modules name: ``"chat.update"`` (camelCase, never an underscore, which
    leaves out labels such as slack_sdk's ``files.upload_v2``) or a client's ``files_completeUploadExternal(``."""
    found = set()
    for path in SLACK:
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(rf"\"((?:{_FAMILIES})(?:\.[A-Za-z]+)+)\"", text))
        found.update(name.replace("_", ".") for name in re.findall(rf"\.((?:{_FAMILIES})_[A-Za-z_]+)\(", text))
    return found


def granted() -> set[str]:
    return set(MANIFEST["oauth_config"]["scopes"]["bot"])


def test_the_manifest_grants_each_scope_the_adapters_calls_need_and_no_other():
    called = methods_called()
    assert called - NEEDS.keys() == set(), "the adapter calls these: add the scopes they need to NEEDS and the manifest"
    assert NEEDS.keys() - called == set(), "the adapter no longer calls these"
    needed = set().union(*NEEDS.values()) | {SLASH_COMMANDS} | MEMBERSHIP
    assert MANIFEST["features"]["slash_commands"], "the manifest declares no slash command: nothing needs commands"
    assert needed - granted() == set(), "the manifest lacks these"
    assert granted() - needed == set(), "the manifest grants these, which nothing uses"


def test_the_scopes_the_start_checks_are_the_manifests():
    # The start warns of a missing scope from slack_scopes, and the fake's token holds the manifest's by default.
    assert {slack_scopes.ANSWERS, *slack_scopes.NEEDED} == granted() == set(BOT_SCOPES)


def test_the_manifest_subscribes_to_each_event_the_adapter_handles_and_it_may_read():
    adapter = (ROOT / "platforms" / "slack.py").read_text(encoding="utf-8")
    handled = set(re.findall(r"app\.event\(\"(\w+)\"\)", adapter))
    assert handled == {"message", "tokens_revoked", "app_uninstalled", "channel_id_changed"}, \
        "a handler this test does not know"
    assert "slack_membership.EVENTS" in adapter
    handled |= set(slack_membership.EVENTS)  # registered in a loop (`SlackAdapter.start`)
    subscribed = MANIFEST["settings"]["event_subscriptions"]["bot_events"]
    # message.<kind> arrive as `message`, each kind of conversation with its own <kind>:history scope.
    kinds = {event.removeprefix("message.") for event in subscribed if event.startswith("message.")}
    assert {f"{kind}:history" for kind in kinds} == HISTORY & granted() == HISTORY
    assert {event.split(".")[0] for event in subscribed} == handled  # app_mention would be a message twice


def test_the_systemd_unit_signals_the_gateway_alone():
    # systemd's default, control-group, sent SIGTERM to each process of the unit at once: a running execute_code
    # snippet died of it, and its turn, which the grace lets finish, answered from "exit code: -15". The gateway
    # ends what it started itself; mixed sends SIGKILL to whatever is left once it has exited.
    assert unit_setting("KillMode") == ["mixed"]
    assert unit_setting("KillSignal") == ["SIGTERM"]


def test_the_systemd_unit_does_not_restart_a_command_line_that_is_refused(tmp_path):
    # argparse refuses it with status 2, the same at every start: Restart=on-failure ran it every 5 s for ever.
    refused = switchboard(tmp_path, "--config", "/etc/switchboard/config.yaml", "run", "--no-such-option")
    assert "unrecognized arguments" in refused.stderr, refused.stderr
    assert str(refused.returncode) in unit_setting("RestartPreventExitStatus"), refused.returncode


def test_the_state_directory_the_gateway_is_given_is_the_one_kept():
    # Elsewhere sessions, outbox and journal would go with the container, or ProtectSystem=strict refuse them.
    unit = dict(setting.split("=", 1) for setting in unit_setting("Environment"))
    assert unit["SWITCHBOARD_STATE_DIR"] == f"/var/lib/{unit_setting('StateDirectory')[0]}"
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    state = re.search(r"\bSWITCHBOARD_STATE_DIR=(\S+)", dockerfile).group(1)
    assert re.search(r"^VOLUME (.+)$", dockerfile, re.M).group(1) == f'["{state}"]'
    compose = yaml.safe_load((ROOT / "deploy" / "compose.scale-out.yaml").read_text(encoding="utf-8"))
    assert f"state:{state}" in compose["services"]["gateway"]["volumes"]


def test_the_documented_check_as_the_service_runs_it_has_the_units_user_secrets_and_file():
    # A check typed in a shell lacks the unit's EnvironmentFile and user: it reported every secret the service has
    # as not set. The start's hint under systemd points at this command, which must stay the unit's.
    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    anchor = SERVICE_ENVIRONMENT.split("#")[1].rstrip(")")
    heading = next(line for line in doc.splitlines() if line.startswith("### Checking a service"))
    assert re.sub(r"[^\w -]", "", heading.lstrip("# ").lower()).replace(" ", "-") == anchor
    block = re.search(r"```sh\n(sudo systemd-run .+?)\n```", doc, re.S).group(1)
    words = shlex.split(block.replace("\\\n", " "))
    assert "--pipe" in words and "--wait" in words  # its output here, and its exit status
    properties = [words[i + 1] for i, word in enumerate(words) if word == "-p"]
    expected = [f"User={unit_setting('User')[0]}", f"EnvironmentFile={unit_setting('EnvironmentFile')[0]}",
                *(f"Environment={assignment}" for assignment in unit_setting("Environment"))]
    assert sorted(properties) == sorted(expected)
    program, *args = unit_setting("ExecStart")
    assert words[-4:] == [program, "config", "check", args[args.index("--config") + 1]]
