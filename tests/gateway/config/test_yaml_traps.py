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
         ' false: quote the word to mean the text, language: "no" or language: "off")'),
        # Which word was written is lost with the parse: offering only "yes" for on, or "no" for off, was wrong.
        ("model:\n  name: on\n",
         'model.name: expected a string, got true (YAML reads a bare yes or on as true: quote the word to mean the'
         ' text, name: "yes" or name: "on")'),
        ("model:\n  name: off\n",
         'model.name: expected a string, got false (YAML reads a bare no or off as false: quote the word to mean the'
         ' text, name: "no" or name: "off")'),
        ("platforms:\n  web: {allowed_users: [alice, no]}\n",
         'platforms.web.allowed_users[1]: expected an integer or a string, got false (YAML reads a bare no or off'
         ' as false: quote the word to mean the text, "no" or "off")'),
    ],
)
def test_a_bare_yes_no_on_or_off_in_a_text_setting_says_yaml_read_a_boolean(write, text, error):
    assert problems(write, text) == [error]


def test_the_same_word_given_with_set_says_the_same(write):
    errors = problems(write, "", overrides=["model.transcription.language=no"])
    assert errors == ['model.transcription.language: expected a string or null, got false (YAML reads a bare no'
                      ' or off as false: quote the word to mean the text, language: "no" or language: "off")']


OCTAL = ("a number written with a leading 0, which YAML 1.1 reads as octal (0755 as 493): write it without the"
         " leading 0, or in quotes if it is text")


@pytest.mark.parametrize(
    ("text", "where"),
    [("server:\n  port: 0755\n", "2:9"), ("platforms:\n  telegram:\n    allowed_users: [42, 0123]\n", "3:25")],
)
def test_a_number_with_a_leading_zero_is_not_silently_read_as_octal(write, text, where):
    path = write(text)
    assert problems(write, text) == [f"{path}:{where}: invalid YAML: {OCTAL}"]


def test_the_same_number_given_with_set_is_refused_the_same_way(write):
    assert problems(write, "", overrides=["server.port=0755"]) == [f"--set server.port: {OCTAL}"]


def test_a_leading_zero_yaml_reads_as_text_is_not_called_quoted(write):
    # 08080 is no octal number, so YAML keeps it as text: there are no quotes to drop.
    assert problems(write, "server:\n  port: 08080\n") == [
        'server.port: expected an integer ≥ 0 and ≤ 65535, got "08080" (YAML reads it as text: write port:'
        " 8080)"]



@pytest.mark.parametrize(("written", "meant"), [("1e3", "1000.0"), ("1.5e3", "1500.0"), ("2E-1", "0.2")])
def test_an_exponent_yaml_reads_as_text_is_not_called_quoted(write, written, meant):
    # YAML 1.1 wants a dot and a signed exponent (1.0e+3): a bare 1e3 is text, with no quotes to drop.
    assert problems(write, f"model:\n  timeout_seconds: {written}\n") == [
        f'model.timeout_seconds: expected a number ≥ 0.001, got "{written}" (YAML reads it as text: write'
        f" timeout_seconds: {meant})"]


def test_a_quoted_whole_number_in_a_number_setting_is_told_to_drop_the_quotes(write):
    assert problems(write, 'model:\n  timeout_seconds: "90"\n') == [
        'model.timeout_seconds: expected a number ≥ 0.001, got "90" (quoted, so it is text: drop the quotes and'
        " write timeout_seconds: 90)"]


def test_a_quoted_number_with_a_leading_zero_is_told_how_to_write_it(write):
    # Not "drop the quotes": bare, 0755 would be refused as octal.
    assert problems(write, 'server:\n  port: "0755"\n') == [
        'server.port: expected an integer ≥ 0 and ≤ 65535, got "0755" (YAML reads it as text: write port: 755)']


@pytest.mark.parametrize(
    ("text", "where", "error"),
    [
        ("agent:\n  system_prompt: Note: be brief\n", "2:22",
         "mapping values are not allowed here (a value with a colon and a space in it needs quotes; or a key is"
         " indented under one that already has a value)"),
        ("server:\n  port: 80\n    host: x\n", "3:9",
         "mapping values are not allowed here (a value with a colon and a space in it needs quotes; or a key is"
         " indented under one that already has a value)"),
        ("server:\n\tport: 80\n", "2:1",
         "while scanning for the next token, found character '\\t' that cannot start any token (YAML indents with"
         " spaces, not tabs)"),
    ],
)
def test_a_yaml_mistake_says_what_to_write(write, text, where, error):
    path = write(text)
    assert problems(write, text) == [f"{path}:{where}: invalid YAML: {error}"]


@pytest.mark.parametrize("character", ["@", "`", "%"])
def test_a_value_starting_with_a_character_yaml_reserves_is_told_to_be_quoted(write, character):
    # `@alice` is how Telegram writes a username, which allowed_users takes.
    text = f"platforms:\n  telegram:\n    allowed_users: [{character}alice]\n"
    path = write(text)
    assert problems(write, text) == [
        f"{path}:3:21: invalid YAML: while scanning for the next token, found character '{character}' that cannot"
        f' start any token (a value that starts with @, ` or % needs quotes, as in "@alice")']


RECURSIVE = ("while composing the node anchored &x, found an alias to it inside it (*x): a value that holds itself"
             " never ends")


@pytest.mark.parametrize(("text", "where"), [("agent: &x [*x]\n", "1:12"), ("server: &x {a: [1, *x]}\n", "1:20")])
def test_an_alias_inside_the_node_it_names_is_an_error_not_a_recursion_without_end(write, text, where):
    # It was a RecursionError, its traceback a thousand frames long: YAML builds such a value, a list
    # or mapping that holds itself, and every reader of it recursed into it.
    path = write(text)
    assert problems(write, text) == [f"{path}:{where}: invalid YAML: {RECURSIVE}"]


def test_an_alias_to_a_node_already_whole_is_still_read(write):
    loaded = load_config(write("server: &x {port: 8081}\nagent: {x: [*x, *x]}\n"), env={})
    assert loaded.config.server.port == 8081 and loaded.warnings == ["agent.x: unknown key"]


UNREADABLE = "and is not a valid one: write a valid one, or quote it if it is text"


@pytest.mark.parametrize(
    ("text", "where", "kind"),
    [
        # YAML 1.1 reads a bare yyyy-mm-dd as a date, and PyYAML raised ValueError for a day no calendar has.
        ("agent:\n  system_prompt: 2024-02-30\n", "2:18", "a date"),
        ("server:\n  port: !!int eighty\n", "2:9", "an integer"),
        ("server:\n  console: !!bool maybe\n", "2:12", "a boolean"),
        ("plugins: !!set [a]\n", "1:10", "!!set"),
    ],
)
def test_a_value_yaml_cannot_read_as_what_it_reads_it_as_is_an_error_at_its_line(write, text, where, kind):
    path = write(text)
    errors = problems(write, text)
    assert len(errors) == 1 and errors[0].startswith(f"{path}:{where}: invalid YAML: "), errors
    if not kind.startswith("!!"):  # a collection's own words say what it needed instead
        assert errors[0].endswith(f"this value reads as {kind}, {UNREADABLE}")


def test_the_same_date_given_with_set_is_refused_the_same_way(write):
    assert problems(write, "", overrides=["agent.system_prompt=2024-02-30"]) == [
        f"--set agent.system_prompt: this value reads as a date, {UNREADABLE}"]
