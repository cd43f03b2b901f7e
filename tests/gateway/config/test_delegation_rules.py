"""`config check` for delegation backends: a missing or invalid backend is an error naming its key;
route credentials are masked; profile files are relative to the config file."""

from __future__ import annotations

import yaml

from gateway.config import config_secrets
from tests.gateway.config.test_config_check import run_check


def test_a_valid_model_map_checks_with_its_keys_masked(write):
    path = write(
        """
        plugins: [advanced_delegation]
        delegation:
          backend: model_map
          model_map:
            fast: {description: Quick lookups, provider: openai, model: gpt-4o-mini}
            deep: {description: Careful, provider: openai, model: o3, base_url: "https://x.example/v1",
                   api_key: "${DEEP_KEY}"}
        """
    )
    status, out, err = run_check(path, env={"DEEP_KEY": "sk-deep-secret-0001"})
    assert (status, err) == (0, "")
    assert "sk-deep-secret-0001" not in out
    rendered = yaml.safe_load(out.split("\n", 1)[1])
    assert rendered["delegation"]["model_map"]["deep"]["api_key"] == "***"
    assert rendered["delegation"]["model_map"]["fast"]["model"] == "gpt-4o-mini"


def test_a_backend_without_its_plugin_or_options_and_incomplete_options_are_errors(write):
    path = write(
        """
        delegation:
          backend: model_map
          model_map:
            fast: {description: Quick, api_key: sk-typed-in-the-file-42}
            "no good": {description: x, provider: openai, model: m}
          profile_routes:
            reviewer: {system_prompt: You review.}
        """
    )
    status, out, err = run_check(path)
    assert status == 1 and out == ""
    assert err.splitlines() == [
        'error: delegation.backend: "model_map" is not available: it is provided by the advanced_delegation plugin:'
        " add advanced_delegation to plugins",
        "error: delegation.model_map.fast.provider: required (each option is {description, provider, model,"
        " base_url?, api_key?})",
        "error: delegation.model_map.fast.model: required (each option is {description, provider, model, base_url?,"
        " api_key?})",
        "error: delegation.model_map.no good: the name must be a short word (letters, digits, _ . -): the model"
        " types it as a route",
        "error: delegation.profile_routes.reviewer.description: required (the parent model chooses a profile by it)",
        f"5 errors in {path}; the gateway would not start",
    ]
    assert "sk-typed-in-the-file-42" not in err


def test_a_backend_with_no_entries_is_an_error(write):
    path = write("plugins: [lifecycle.plugins.advanced_delegation]\ndelegation: {backend: profile_routes}\n")
    status, _, err = run_check(path)
    assert status == 1
    assert err.splitlines()[0] == ('error: delegation.backend: "profile_routes" is not available: '
                                   "delegation.profile_routes has no entries: add at least one")


def test_any_backend_name_passes_as_a_plugin_may_register_it_but_not_what_no_backend_is_called(write):
    # Whether a plugin registers it is known once the plugins have loaded: the start checks that.
    assert run_check(write("plugins: [my_routes]\ndelegation: {backend: magic}\n"))[::2] == (0, "")
    for name in ("Bad Name", "model-map", "_x", "a" * 41):
        status, _, err = run_check(write(f'delegation: {{backend: "{name}"}}\n'))
        assert status == 1 and err.splitlines()[0] == (
            f'error: delegation.backend: "{name}" is not a backend name: a lower-case word (a-z, 0-9, _, starting'
            " with a letter; at most 40 characters)")


def test_profile_files_are_relative_to_the_config_file_and_must_be_readable(write, tmp_path):
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "review.md").write_text("Look for bugs.", encoding="utf-8")
    good = write(
        """
        plugins: [advanced_delegation]
        delegation:
          profile_routes:
            reviewer: {description: Reviews, context_files: [skills/review.md], toolsets: [file]}
        """
    )
    status, out, err = run_check(good)
    assert (status, err) == (0, "")
    assert yaml.safe_load(out.split("\n", 1)[1])["delegation"]["profile_routes"]["reviewer"]["context_files"] == [
        str(tmp_path / "skills" / "review.md")]
    bad = write(
        """
        plugins: [advanced_delegation]
        delegation:
          profile_routes:
            reviewer: {description: Reviews, context_files: [skills/missing.md]}
        """, name="bad.yaml")
    status, _, err = run_check(bad)
    assert status == 1
    assert err.splitlines()[0] == (f"error: delegation.profile_routes.reviewer.context_files[0]: cannot read "
                                   f"{tmp_path / 'skills' / 'missing.md'} (No such file or directory)")


def test_routes_set_without_the_plugin_are_warned_about(write):
    path = write("delegation: {model_map: {fast: {description: d, provider: openai, model: m}}}\n")
    status, _, err = run_check(path)
    assert status == 0
    assert err == ("warning: delegation: model_map or profile_routes are set but the advanced_delegation plugin is not"
                   " in plugins, so no chat can use them\n")


def test_route_keys_are_registered_for_log_redaction(load):
    config, _ = load("delegation: {model_map: {fast: {description: d, provider: openai, model: m,"
                     " api_key: sk-route-key-77}}}\n")
    assert "sk-route-key-77" in config_secrets(config)
