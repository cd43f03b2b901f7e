"""A model's name from the configuration is sent to the provider and becomes a `/metrics` label, a span's name and
part of log lines. Half of a UTF-16 pair in it (a lone surrogate: YAML's ``"\\ud83d"``, or an undecodable byte of
``${MODEL}`` as Python reads the environment) could not be encoded there, and a control character is no name the
provider knows: refused at load, naming the key, with the character shown as an escape."""

from __future__ import annotations

import json

import pytest

from gateway.config import ConfigError

_KEYS = {
    "model.name": lambda v: {"model": {"name": v}},
    "model.transcription.name": lambda v: {"model": {"transcription": {"name": v}}},
    "delegation.model": lambda v: {"delegation": {"model": v}},
    "delegation.model_map.fast.model": lambda v: {
        "plugins": ["advanced_delegation"],
        "delegation": {"model_map": {"fast": {"description": "quick", "provider": "demo", "model": v}}}},
    "delegation.profile_routes.coder.model": lambda v: {
        "plugins": ["advanced_delegation"],
        "delegation": {"profile_routes": {"coder": {"description": "code", "model": v}}}},
}


@pytest.mark.parametrize("key", list(_KEYS))
@pytest.mark.parametrize(("value", "problem"), [
    ("gpt\ud83d", '"gpt\\ud83d" holds half of a UTF-16 pair (U+D83D)'),
    ("gpt-4o\n", '"gpt-4o\\n" holds a control character (U+000A)'),
    ("gpt\x1b[2J", '"gpt\\u001b[2J" holds a control character (U+001B)'),
    ("gpt\x9b", '"gpt\\u009b" holds a control character (U+009B)'),
])
def test_a_model_name_with_a_lone_surrogate_or_a_control_character_is_refused(load, key, value, problem):
    with pytest.raises(ConfigError) as caught:
        load(json.dumps(_KEYS[key](value)))
    [error] = [e for e in caught.value.errors if e.startswith(f"{key}:")]
    assert error.startswith(f"{key}: {problem}"), error
    error.encode("utf-8")  # printable as it is: the surrogate itself is never in it


def test_a_surrogate_from_an_undecodable_environment_byte_is_refused(load):
    # Python reads a byte that is no UTF-8 (Latin-1's ü in MODEL) as a lone surrogate, U+DCFC.
    with pytest.raises(ConfigError) as caught:
        load("model:\n  name: ${MODEL}\n", env={"MODEL": "m\udcfcller"})
    # Named by its variable, never shown: the expansion refuses it for any key (test_config_env_surrogates).
    assert caught.value.errors == ["model.name: environment variable MODEL holds a byte that is not UTF-8, which no"
                                   " setting can use (a client would drop or fail on it): set it as UTF-8 text"]


@pytest.mark.parametrize("value", ["gpt-4o-2024-08-06", "qwen2.5:7b-instruct", "meta-llama/Llama-3.1-8B",
                                   "modèle français", "模型"])
def test_names_of_any_script_and_punctuation_are_kept(load, value):
    config, _ = load(json.dumps({"model": {"name": value}, "delegation": {"model": value}}))
    assert (config.model.name, config.delegation.model) == (value, value)


@pytest.mark.parametrize("kind", ["model_map", "profile_routes"])
def test_a_route_name_holding_a_control_character_is_shown_escaped_in_every_error(load, kind):
    """The operator's own route name is part of each error's key: with a raw ESC in it, `config check` wrote
    ``fa^[[2Jst`` to the terminal (a screen cleared), and a NEL or U+2028 broke the line."""
    route = {"description": "quick", "provider": "demo", "model": "g\n"} if kind == "model_map" else {
        "description": "code", "model": "g\n"}
    config = {"plugins": ["advanced_delegation"], "delegation": {kind: {"fa\x1b[2Jst\u2028": route}}}
    with pytest.raises(ConfigError) as caught:
        load(json.dumps(config))
    named = [e for e in caught.value.errors if e.startswith(f"delegation.{kind}.")]
    assert named and all(e.startswith(f'delegation.{kind}."fa\\u001b[2Jst\\u2028"') for e in named), named
    assert not any("\x1b" in e or "\u2028" in e for e in caught.value.errors)
