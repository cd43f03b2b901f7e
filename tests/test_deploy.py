"""The deployment files in deploy/ agree with each other and with the code they deploy."""

from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from gateway.app import CLOSE_FLOOR_SECONDS
from gateway.cli import build_parser
from gateway.commands import BUILTIN
from gateway.config import Config, config_check
from gateway.config.sections import ServerSettings
from gateway.left_behind import STUCK_WAIT_SECONDS
from gateway.server import CUT_OFF_SECONDS
from gateway.state_lock import StateLock
from lifecycle.temporal._worker import STUCK_WAIT_SECONDS as WORKER_STUCK_WAIT_SECONDS
from platforms.base import LAST_CALLS_FLOOR
from tests.gateway.cli_process import TIMEOUT, environment, write_config

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def invocations():
    """Each command line a deployment file (or `make run`) runs, as (where, argv)."""
    unit = (DEPLOY / "switchboard.service").read_text(encoding="utf-8")
    yield "switchboard.service", re.search(r"^ExecStart=(.+)$", unit, re.M).group(1).split()
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    yield "Dockerfile", json.loads(re.search(r"^CMD (.+)$", dockerfile, re.M).group(1))
    compose = yaml.safe_load((DEPLOY / "compose.scale-out.yaml").read_text(encoding="utf-8"))
    for name in ("gateway", "worker"):
        yield f"compose.scale-out.yaml {name}", compose["services"][name]["command"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    yield "make run", re.search(r"^run:.*\n\t(.+)$", makefile, re.M).group(1).split()


@pytest.mark.parametrize(("where", "argv"), [pytest.param(*pair, id=pair[0]) for pair in invocations()])
def test_deployment_files_run_a_command_the_cli_has(where, argv):
    program, *args = argv
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert Path(program).name in scripts, f"{where} runs {program}, which the package does not install"
    usage = io.StringIO()
    with contextlib.redirect_stderr(usage), contextlib.suppress(SystemExit):
        build_parser().parse_args(args)
    assert not usage.getvalue(), f"{where}: `switchboard {' '.join(args)}` is refused:\n{usage.getvalue()}"


def test_every_volume_a_switchboard_container_writes_to_belongs_to_its_user():
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    user = re.search(r"^USER (\S+)$", dockerfile, re.M).group(1)
    # A new named volume takes the owner and mode of the directory it is mounted on, root's where the image
    # has none; 0700, as the state directory, since conversations and the files people sent lie there.
    private = set()
    for paths in re.findall(rf"install -d -o {user} -g {user} -m 0?700 ([^\n\\]+)", dockerfile):
        private.update(paths.split())
    compose = yaml.safe_load((DEPLOY / "compose.scale-out.yaml").read_text(encoding="utf-8"))
    for name, service in compose["services"].items():
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        assert "user" not in service, f"{name} runs as {service['user']}, not as the image's {user}"
        for mount in service["volumes"]:
            source, target, *mode = mount.split(":")
            if source in compose["volumes"] and mode != ["ro"]:
                assert target in private, f"{name} writes to {target}, which the image does not give to {user}, 0700"


def test_the_temporal_dev_server_keeps_its_database_on_its_volume():
    # Elsewhere its workflows (the children in flight) would go with the container.
    temporal = yaml.safe_load((DEPLOY / "compose.scale-out.yaml").read_text(encoding="utf-8"))["services"]["temporal"]
    command = temporal["command"]
    database = Path(command[command.index("--db-filename") + 1])
    mounts = [Path(mount.split(":")[1]) for mount in temporal["volumes"]]
    assert any(mount in database.parents for mount in mounts), (database, mounts)


def seconds(duration: str) -> float:
    """A compose duration (``1m30s``, ``15s``) in seconds."""
    parts = re.fullmatch(r"(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", duration)
    assert parts is not None and duration, f"not a compose duration: {duration!r}"
    return 60 * int(parts.group(1) or 0) + float(parts.group(2) or 0)


def test_compose_gives_the_gateway_and_workers_the_stop_time_their_grace_needs():
    # Docker kills a container 10 s after SIGTERM unless told otherwise: a gateway on Temporal takes the grace
    # and a second for the engine's last requests, a worker the grace and a second for calls ignoring their
    # cancellation; each kind of work left behind (turns, plugin commands, tasks) a second more.
    raw = yaml.safe_load((DEPLOY / "scale-out.yaml").read_text(encoding="utf-8"))
    grace = (raw.get("server") or {}).get("shutdown_grace_seconds", ServerSettings().shutdown_grace_seconds)
    needs = {"gateway": grace + CLOSE_FLOOR_SECONDS + 3 * STUCK_WAIT_SECONDS,
             "worker": grace + WORKER_STUCK_WAIT_SECONDS}
    compose = yaml.safe_load((DEPLOY / "compose.scale-out.yaml").read_text(encoding="utf-8"))
    for name, needed in needs.items():
        assert seconds(compose["services"][name].get("stop_grace_period", "10s")) >= needed, name


def longest_gateway_stop(grace: float) -> float:
    """A gateway's stop at its longest (docs/gateway.md): the grace, a second more for the Temporal engine's
    last requests, one for each of Slack's and Discord's last calls, one for an HTTP client that does not read
    its answer, and one for each kind of work left behind (turns, plugin commands, children)."""
    return grace + CLOSE_FLOOR_SECONDS + 2 * LAST_CALLS_FLOOR + CUT_OFF_SECONDS + 3 * STUCK_WAIT_SECONDS


def test_the_systemd_unit_waits_for_the_longest_stop_before_it_kills():
    unit = (DEPLOY / "switchboard.service").read_text(encoding="utf-8")
    assert re.search(r"^KillSignal=(.+)$", unit, re.M).group(1) == "SIGTERM"  # the signal that stops gracefully
    timeout = float(re.search(r"^TimeoutStopSec=(\d+)s?$", unit, re.M).group(1))
    assert timeout >= longest_gateway_stop(ServerSettings().shutdown_grace_seconds)


def test_the_systemd_unit_takes_a_stop_while_the_command_loads_for_a_clean_exit():
    # gateway.entry: SIGTERM before the command set its own handlers ends it with 128 + SIGTERM, which systemd
    # counted a failure (the unit "failed" after a `systemctl stop` during the start, and restarted after a kill).
    unit = (DEPLOY / "switchboard.service").read_text(encoding="utf-8")
    success = re.search(r"^SuccessExitStatus=(.+)$", unit, re.M)
    assert success is not None and str(128 + signal.SIGTERM) in success.group(1).split()


def test_the_docker_run_line_gives_the_stop_the_time_it_takes():
    # Docker kills a container 10 s after SIGTERM, the grace's own default: a stop that used it was cut short.
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert "STOPSIGNAL" not in dockerfile or re.search(r"^STOPSIGNAL SIGTERM$", dockerfile, re.M)
    run = re.search(r"^#\s+docker run (.+)$", dockerfile, re.M)
    assert run is not None, "the Dockerfile no longer shows how to run its image"
    timeout = re.search(r"--stop-timeout[ =](\d+)", run.group(1))
    assert timeout is not None and float(timeout.group(1)) >= longest_gateway_stop(
        ServerSettings().shutdown_grace_seconds)


def test_the_slack_manifest_declares_every_command_the_gateway_serves():
    # Slack refuses a slash command the app does not declare before it reaches the gateway.
    manifest = yaml.safe_load((DEPLOY / "slack-app-manifest.yaml").read_text(encoding="utf-8"))
    declared = [command["command"] for command in manifest["features"]["slash_commands"]]
    assert declared == [f"/{command.name}" for command in BUILTIN]


def switchboard_configs():
    """Every configuration file in deploy/: a mapping whose keys are all configuration sections."""
    sections = set(Config.__dataclass_fields__)
    for path in sorted(DEPLOY.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(raw, dict) and raw and set(raw) <= sections:
            yield pytest.param(path, id=path.name)


@pytest.mark.parametrize("path", list(switchboard_configs()))
def test_every_configuration_in_deploy_passes_config_check(path, tmp_path):
    # The variables a file reads (compose and systemd set them) get a value every secret accepts.
    env = {name: "123456:TEST-token" for name in re.findall(r"\$\{(\w+)\}", path.read_text(encoding="utf-8"))}
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={**env, "SWITCHBOARD_STATE_DIR": str(tmp_path)}) == 0, err.getvalue()
    assert err.getvalue() == ""


def test_the_deploy_configurations_found_are_the_ones_shipped():
    assert [p.values[0].name for p in switchboard_configs()] == ["scale-out.yaml", "switchboard.example.yaml"]


def test_the_image_runs_the_gateway_under_an_init_that_reaps_orphans():
    # As PID 1 the gateway would leave a zombie of every orphan it inherits (an execute_code snippet's background
    # processes, ended by its keeper): tini reaps them, and passes SIGTERM on.
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert json.loads(re.search(r"^ENTRYPOINT (.+)$", dockerfile, re.M).group(1)) == ["/usr/bin/tini", "--"]
    assert re.search(r"apt-get install -y --no-install-recommends tini\b", dockerfile)


def unit_setting(key: str) -> list[str]:
    unit = (DEPLOY / "switchboard.service").read_text(encoding="utf-8")
    found = re.search(rf"^{key}=(.*)$", unit, re.M)
    return found.group(1).split() if found else []


def switchboard(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``switchboard`` command (`gateway.entry`, as pyproject's script runs it), to its end."""
    entry = "import sys; from gateway.entry import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", entry, *args], capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL, cwd=tmp_path, env=environment(tmp_path))


@pytest.fixture
def gateway_config(tmp_path):
    return write_config(tmp_path / "switchboard.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": "s3cret-0"}}}}})


def test_the_systemd_unit_does_not_restart_what_only_the_operator_can_mend(tmp_path, gateway_config):
    # Restart=on-failure restarted a start that fails the same way every time (a typo in the file) every 5 s
    # for ever, filling the journal with the same line.
    assert unit_setting("Restart") == ["on-failure"]
    prevented = unit_setting("RestartPreventExitStatus")
    config_error = switchboard(tmp_path, "--config", str(gateway_config), "--set", "server.port=eighty", "run")
    assert "server.port" in config_error.stderr and str(config_error.returncode) in prevented, config_error.stderr


def test_the_systemd_unit_restarts_a_start_that_may_mend_by_itself(tmp_path, gateway_config):
    # A model server that is not up yet (started by another unit at boot) answers a later start.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    result = switchboard(tmp_path, "--config", str(gateway_config), "--set", "model.provider=openai",
                         "--set", f"model.base_url={url}", "run")
    assert "cannot reach" in result.stderr, result.stderr
    assert result.returncode != 0 and str(result.returncode) not in unit_setting("SuccessExitStatus")
    assert str(result.returncode) not in unit_setting("RestartPreventExitStatus")
    # Nor a state directory another gateway holds (issue 14: status 1): that one may be on its way out.
    held = StateLock.acquire(tmp_path / "state")  # another process's, as the child sees it
    try:
        in_use = switchboard(tmp_path, "--config", str(gateway_config), "run")
    finally:
        held.release()
    assert "is in use by" in in_use.stderr and in_use.returncode == 1, in_use.stderr
    assert str(in_use.returncode) not in unit_setting("RestartPreventExitStatus")
