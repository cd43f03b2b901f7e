r"""A double-quoted ``"\ud83d\ude00"`` (how JSON and some editors write 😀) is two UTF-16 halves to PyYAML: a model's
name holding them was refused as "half of a UTF-16 pair", and a prompt or a route's name carried them into logs,
files and platforms that cannot encode them. The configuration's reader joins each pair into its character, in keys
and values, from the file and from ``--set``; a half without its other is still refused."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError, load_config

_PROFILE = r"""
model:
  name: "\ud83d\ude00-bot"
plugins: [advanced_delegation]
delegation:
  profile_routes:
    coder:
      description: "writes code \ud83d\udc4d"
      system_prompt: "You are kind \u263a and glad \ud83d\ude00\ud83d\ude00."
      model: "m\U0001F600"
"""


def test_an_escaped_pair_loads_as_its_character_in_names_and_prompts(load):
    config, _ = load(_PROFILE)
    assert config.model.name == "😀-bot"
    [(name, route)] = config.delegation.profile_routes.items()
    assert name == "coder"
    assert (route.description, route.system_prompt, route.model) == (
        "writes code 👍", "You are kind ☺ and glad 😀😀.", "m😀")


def test_an_escaped_pair_in_a_key_is_its_character(load):
    with pytest.raises(ConfigError) as caught:
        load(_PROFILE.replace("coder:", '"\\ud83e\\udd16":'))
    assert any(e.startswith("delegation.profile_routes.🤖: the name must be a short word") for e in
               caught.value.errors), caught.value.errors


def test_a_key_written_escaped_and_as_its_character_is_written_twice(load):
    with pytest.raises(ConfigError) as caught:
        load('model:\n  name: x\n"\\ud83d\\ude00": 1\n"😀": 2\n')
    assert any('found duplicate key "😀"' in e for e in caught.value.errors), caught.value.errors


def test_an_escaped_pair_set_on_the_command_line_is_its_character(write):
    config, _ = load_config(write("model:\n  name: x\n"), env={}, overrides=['model.name="\\ud83d\\ude00"'])
    assert config.model.name == "😀"


@pytest.mark.parametrize(("written", "shown", "half"), [
    (r"gpt\ud83d", r"gpt\ud83d", "D83D"),  # a high half alone
    (r"\ude00\ud83d", r"\ude00\ud83d", "DE00"),  # the halves in the wrong order are no pair
    (r"\ud83d\ud83d\ude00", r"\ud83d😀", "D83D"),  # the pair after a lone half is still joined
])
def test_a_half_without_its_other_is_still_refused(load, written, shown, half):
    with pytest.raises(ConfigError) as caught:
        load(f'model:\n  name: "{written}"\n')
    assert any(e.startswith(f'model.name: "{shown}" holds half of a UTF-16 pair (U+{half})')
               for e in caught.value.errors), caught.value.errors
