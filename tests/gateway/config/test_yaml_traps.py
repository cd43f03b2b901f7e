"""YAML 1.1 reads some plain words and numbers as something else than their writer meant
(`no` is false, `0755` is 493): each such mistake is an error that says what YAML read and how
to write what was meant, in the file and on the command line (`--set`) alike."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError, load_config


def problems(write, text: str, overrides=()) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(write(text), env={}, overrides=overrides)
    return info.value.errors


@pytest.mark.parametrize(
    ("text", "error"),
    [
        # The Norway problem: Norwegian's ISO-639-1 code is a boolean to YAML 1.1.
        ("model:\n  transcription: {language: no}\n",
         'model.transcription.language: expected a string or null, got false (YAML reads a bare no or off as'
         ' false: quote it to mean the text, language: "no")'),
        ("model:\n  name: on\n",
         'model.name: expected a string, got true (YAML reads a bare yes or on as true: quote it to mean the text,'
         ' name: "yes")'),
        ("platforms:\n  web: {allowed_users: [alice, no]}\n",
         'platforms.web.allowed_users[1]: expected an integer or a string, got false (YAML reads a bare no or off'
         ' as false: quote it to mean the text, "no")'),
    ],
)
def test_a_bare_yes_no_on_or_off_in_a_text_setting_says_yaml_read_a_boolean(write, text, error):
    assert problems(write, text) == [error]


def test_the_same_word_given_with_set_says_the_same(write):
    errors = problems(write, "", overrides=["model.transcription.language=no"])
    assert errors == ['model.transcription.language: expected a string or null, got false (YAML reads a bare no'
                      ' or off as false: quote it to mean the text, language: "no")']
