"""The container image reads the configuration where its run line mounts it, and keeps nothing of its own in the
state volume."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from gateway.cli import EXIT_CONFIG
from tests.gateway.cli_process import environment, run

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
DOCKERFILE = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")


def image_environment() -> dict[str, str]:
    """The variables the image's ENV instructions set."""
    env = {}
    for instruction in re.findall(r"^ENV (.+)$", DOCKERFILE.replace("\\\n", " "), re.M):
        env.update(pair.split("=", 1) for pair in shlex.split(instruction))
    return env


def run_line() -> list[str]:
    """The `docker run` the Dockerfile's comment shows, as words."""
    found = re.search(r"^#\s+(docker run (?:[^\n]*\\\n#)*[^\n]*)$", DOCKERFILE, re.M)
    assert found is not None, "the Dockerfile no longer shows how to run its image"
    return shlex.split(re.sub(r"\\\n#\s+", " ", found.group(1)))


def test_the_image_reads_the_configuration_where_its_run_line_mounts_it():
    # Without it the gateway ran on the built-in defaults, on 127.0.0.1 where nothing outside reaches it, unsaid.
    config = image_environment().get("SWITCHBOARD_CONFIG")
    assert config == "/etc/switchboard/config.yaml"
    words = run_line()
    mounts = [words[i + 1] for i, word in enumerate(words) if word in ("-v", "--volume")]
    assert any(mount.split(":")[1] == config for mount in mounts), mounts
    assert not any(word.startswith("SWITCHBOARD_CONFIG=") for word in words), "the image sets it already"


def test_compose_mounts_the_configuration_where_its_containers_read_it():
    compose = yaml.safe_load((DEPLOY / "compose.scale-out.yaml").read_text(encoding="utf-8"))
    anchor = compose["x-switchboard"]
    for name in ("gateway", "worker"):
        service = {**anchor, **compose["services"][name]}
        config = {**image_environment(), **service.get("environment", {})}["SWITCHBOARD_CONFIG"]
        assert config in [mount.split(":")[1] for mount in service["volumes"]], name


@pytest.mark.skipif(Path("/etc/switchboard/config.yaml").exists(), reason="this machine has the image's file")
def test_a_container_without_its_configuration_mounted_says_so(tmp_path):
    env = environment(tmp_path, **{**image_environment(), "SWITCHBOARD_STATE_DIR": str(tmp_path / "state")})
    missing = "config file /etc/switchboard/config.yaml (from $SWITCHBOARD_CONFIG) does not exist"
    check = run(tmp_path, "config", "check", env=env)
    assert (check.returncode, check.stdout) == (1, "") and f"error: {missing}" in check.stderr, check.stderr
    start = run(tmp_path, "run", env=env)
    assert start.returncode == EXIT_CONFIG and f"error: {missing}" in start.stderr, start.stderr
    # `-e SWITCHBOARD_CONFIG=` (empty) is the way to the built-in defaults, as documented.
    defaults = run(tmp_path, "config", "check", env={**env, "SWITCHBOARD_CONFIG": ""})
    assert defaults.returncode == 0 and "built-in defaults" in defaults.stdout, defaults.stderr


def test_the_image_leaves_the_state_volume_to_the_gateway():
    # useradd --create-home copied /etc/skel's .bashrc, .profile and .bash_logout into the home, which is the state
    # directory: every new state volume began with them. `install -d` makes the home, switchboard's and 0700.
    useradd = re.search(r"useradd ([^\n\\&]+)", DOCKERFILE).group(1).split()
    assert "--create-home" not in useradd and "-m" not in useradd, useradd
    home = useradd[useradd.index("--home") + 1]
    made = re.search(r"install -d -o switchboard -g switchboard -m 0?700 ([^\n\\]+)", DOCKERFILE).group(1).split()
    assert home in made and home == image_environment()["SWITCHBOARD_STATE_DIR"]
