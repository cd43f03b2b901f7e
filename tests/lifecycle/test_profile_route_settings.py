"""A ``profile_routes`` profile whose provider, base_url or api_key would be accepted but not used
(no model, or a provider that does not read them) is an error of ``config check`` and of the start,
naming the profile and the setting, instead of a child that silently runs on another model."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent.settings import ModelSettings
from gateway.config import ConfigError, config_check, config_from_mapping
from lifecycle.plugins.advanced_delegation import ProfileRoutesBackend
from lifecycle.settings import ProfileRoute

URL = "http://127.0.0.1:9/v1"
KEY = "sk-profile-secret-4242"
NEEDS_MODEL = ("needs model (provider, base_url and api_key describe the profile's own model; without model the"
               " profile runs on the default child model): set model or remove {key}")


def errors_of(profiles: dict, parent: str = "openai") -> list[str]:
    raw = {"model": {"provider": parent, "name": "parent-model"}, "plugins": ["advanced_delegation"],
           "delegation": {"profile_routes": profiles}}
    try:
        config_from_mapping(raw, env={})
    except ConfigError as exc:
        return exc.errors
    return []


@pytest.mark.parametrize("key, value", [("api_key", KEY), ("base_url", URL), ("provider", "openai")])
def test_a_model_setting_without_model_is_an_error_naming_profile_and_key(key, value):
    errors = errors_of({"coder": {"description": "Writes code.", key: value}})
    assert errors == [f"delegation.profile_routes.coder.{key}: " + NEEDS_MODEL.format(key=key)]
    assert KEY not in str(errors)


@pytest.mark.parametrize("parent, profile", [
    ("demo", {"model": "m", "base_url": URL}),
    ("openai", {"provider": "demo", "model": "m", "api_key": KEY}),
])
def test_base_url_or_api_key_on_a_provider_that_does_not_read_them_is_an_error(parent, profile):
    (error,) = errors_of({"coder": {"description": "Writes code.", **profile}}, parent)
    key = "base_url" if "base_url" in profile else "api_key"
    assert error == (f"delegation.profile_routes.coder.{key}: not used by the demo provider (only openai reads it):"
                     f" set provider: openai or remove {key}")


@pytest.mark.parametrize("profile", [
    {},
    {"model": "m"},
    {"model": "m", "api_key": KEY},
    {"model": "m", "base_url": URL},
    {"provider": "openai", "model": "m", "base_url": URL, "api_key": KEY},
    {"provider": "demo", "model": "m"},
])
def test_every_used_combination_still_checks(profile):
    assert errors_of({"coder": {"description": "Writes code.", **profile}}) == []


def test_config_check_reports_it_without_the_key(tmp_path: Path):
    path = tmp_path / "config.yaml"
    path.write_text(f"plugins: [advanced_delegation]\ndelegation:\n  profile_routes:\n"
                    f"    coder: {{description: Writes code., api_key: {KEY}}}\n", encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={}) == 1
    assert err.getvalue().splitlines()[0] == ("error: delegation.profile_routes.coder.api_key: "
                                              + NEEDS_MODEL.format(key="api_key"))
    assert KEY not in err.getvalue() + out.getvalue()


def test_the_start_refuses_it_too(tmp_path: Path):
    # A config built in code skips the loader's check; the plugin's registration is the start's.
    parent = ModelSettings(provider="openai", name="parent-model")
    with pytest.raises(ValueError) as caught:
        ProfileRoutesBackend({"coder": ProfileRoute(description="Writes code.", api_key=KEY)}, parent, tmp_path)
    assert str(caught.value) == "delegation.profile_routes.coder.api_key: " + NEEDS_MODEL.format(key="api_key")
    assert KEY not in str(caught.value)


def test_a_profile_with_an_empty_model_runs_on_the_default_child_model(tmp_path: Path):
    parent = ModelSettings(provider="demo", name="parent-model")
    backend = ProfileRoutesBackend({"coder": ProfileRoute(description="Writes code.", model="")}, parent, tmp_path)
    assert backend.resolve("coder").model is None
