"""Where the configuration comes from: lookup order, YAML errors, ${VAR} expansion, state_dir."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.config import Config, ConfigError, load_config
from gateway.config.interpolate import expand
from gateway.errors import GatewayError


def errors_of(call) -> list[str]:
    with pytest.raises(ConfigError) as info:
        call()
    return info.value.errors


# --- lookup order -------------------------------------------------------------------------


def test_no_file_anywhere_gives_builtin_defaults():
    config, warnings = load_config(env={})
    assert config.source is None
    assert warnings == []
    assert config.delegation == Config().delegation
    assert config.server.port == 8080


def test_explicit_path_wins_over_everything(write, isolated):
    explicit = write("server: {port: 1}", "explicit.yaml")
    named = write("server: {port: 2}", "named.yaml")
    (isolated / "cwd" / "switchboard.yaml").write_text("server: {port: 3}")
    config, _ = load_config(explicit, env={"SWITCHBOARD_CONFIG": str(named)})
    assert (config.server.port, config.source) == (1, explicit)


def test_env_var_wins_over_cwd_file(write, isolated):
    named = write("server: {port: 2}", "named.yaml")
    (isolated / "cwd" / "switchboard.yaml").write_text("server: {port: 3}")
    assert load_config(env={"SWITCHBOARD_CONFIG": str(named)}).config.server.port == 2


def test_cwd_file_wins_over_home_file(isolated):
    (isolated / "cwd" / "switchboard.yaml").write_text("server: {port: 3}")
    home_config = isolated / "home" / ".config" / "switchboard" / "config.yaml"
    home_config.parent.mkdir(parents=True)
    home_config.write_text("server: {port: 4}")
    config, _ = load_config(env={})
    assert (config.server.port, config.source) == (3, isolated / "cwd" / "switchboard.yaml")
    (isolated / "cwd" / "switchboard.yaml").unlink()
    config, _ = load_config(env={})
    assert (config.server.port, config.source) == (4, home_config)


def test_xdg_config_home_replaces_dot_config(isolated):
    xdg = isolated / "xdg"
    (xdg / "switchboard").mkdir(parents=True)
    (xdg / "switchboard" / "config.yaml").write_text("server: {port: 5}")
    assert load_config(env={"XDG_CONFIG_HOME": str(xdg)}).config.server.port == 5


def test_missing_explicit_file_is_an_error_naming_it(isolated):
    missing = isolated / "nope.yaml"
    errors = errors_of(lambda: load_config(missing, env={}))
    assert errors == [f"config file {missing} does not exist"]
    errors = errors_of(lambda: load_config(env={"SWITCHBOARD_CONFIG": str(missing)}))
    assert errors == [f"config file {missing} (from $SWITCHBOARD_CONFIG) does not exist"]


def test_config_error_is_a_gateway_error():
    assert issubclass(ConfigError, GatewayError)


# --- the file itself --------------------------------------------------------------------


def test_empty_file_means_defaults(load):
    config, warnings = load("")
    assert (config.server, warnings) == (Config().server, [])


def test_yaml_syntax_error_names_file_and_line(write):
    path = write("server:\n  port: 1\n  host: [oops\n")
    [error] = errors_of(lambda: load_config(path, env={}))
    assert error.startswith(f"{path}:")
    assert "invalid YAML" in error
    line = int(error[len(str(path)) + 1 :].split(":")[0])
    assert line in (3, 4)  # PyYAML reports where it noticed the unclosed bracket


def test_duplicate_keys_are_an_error(write):
    path = write("server:\n  port: 1\n  port: 2\n")
    [error] = errors_of(lambda: load_config(path, env={}))
    assert error.startswith(f"{path}:3:") and 'duplicate key "port"' in error


def test_top_level_must_be_a_mapping(write):
    path = write("- a\n- b\n")
    assert errors_of(lambda: load_config(path, env={})) == [
        f"{path}: the top level must be a mapping of sections, got a list"
    ]


def test_empty_section_means_defaults(load):
    config, warnings = load("display:\nplatforms:\n  telegram:\n")
    assert config.display == Config().display and warnings == []


# --- ${VAR} expansion -------------------------------------------------------------------


def test_variable_and_default(load):
    config, _ = load(
        """
        model: {name: "${MODEL}", base_url: "http://${HOST:-localhost}:11434/v1"}
        """,
        env={"MODEL": "llama3"},
    )
    assert (config.model.name, config.model.base_url) == ("llama3", "http://localhost:11434/v1")


def test_default_applies_to_an_empty_variable_too(load):
    config, _ = load('model: {name: "${MODEL:-demo}"}', env={"MODEL": ""})
    assert config.model.name == "demo"


def test_unset_variable_is_an_error_naming_key_and_variable(load):
    errors = errors_of(lambda: load("platforms:\n  telegram: {token: '${TG_TOKEN}'}\n"))
    assert errors == [
        "platforms.telegram.token: environment variable TG_TOKEN is not set "
        "(use ${TG_TOKEN:-default} to give a default)"
    ]


def test_a_value_an_empty_variable_made_invalid_names_that_variable(load):
    # Set but empty (TELEGRAM_TOKEN= in an env file): "required" or got "" alone point at the file,
    # which is right; the variable is what is wrong. Its name is said, never another variable's value.
    errors = errors_of(lambda: load(
        """
        server: {port: "${PORT}"}
        platforms:
          telegram: {enabled: true, allow_all: true, token: "${TELEGRAM_TOKEN}"}
        model: {base_url: "http://${LLM_HOST}:${LLM_PORT}/v1", api_key: "${KEY}"}
        """,
        env={"PORT": "", "TELEGRAM_TOKEN": "", "LLM_HOST": "", "LLM_PORT": "8000", "KEY": "sk-secret-value"},
    ))
    assert [e for e in errors if e.startswith("server.port")] == [
        'server.port: expected an integer ≥ 0 and ≤ 65535, got "" (from ${PORT}, which is set but empty)']
    assert [e for e in errors if e.startswith("platforms.telegram.token")] == [
        "platforms.telegram.token: required when platforms.telegram.enabled is true"
        " (from ${TELEGRAM_TOKEN}, which is set but empty)"]
    assert [e for e in errors if e.startswith("model.base_url")][0].endswith(
        "(from ${LLM_HOST}, which is set but empty)")
    assert len(errors) == 3 and "sk-secret-value" not in "\n".join(errors)


def test_expansion_happens_after_parsing_so_values_cannot_inject_yaml(load):
    # A text that may hold a line break: a model's name may not (`test_config_model_name_characters`).
    config, warnings = load('agent: {system_prompt: "${NAME}"}', env={"NAME": "x\nserver: {port: 1}"})
    assert config.agent.system_prompt == "x\nserver: {port: 1}"
    assert config.server.port == 8080 and warnings == []


def test_escape_for_a_literal_reference(load):
    config, _ = load('agent: {system_prompt: "costs $5, write $${HOME} literally"}', env={"HOME": "/x"})
    assert config.agent.system_prompt == "costs $5, write ${HOME} literally"


@given(st.text(alphabet="${}AB:-", max_size=20))
def test_escaping_every_reference_gives_the_text_back(text):
    assert expand(text.replace("${", "$${"), {}) == text


def test_expanded_strings_are_coerced_for_numbers_and_booleans(load):
    config, _ = load(
        """
        server: {port: "${PORT}", shutdown_grace_seconds: "${GRACE}"}
        platforms:
          telegram: {allow_all: "${OPEN}", allowed_users: ["${ADMIN}", "bob"]}
          discord: {command_guilds: ["${GUILD}"]}
        model: {temperature: "${TEMP:-}"}
        """,
        env={"PORT": "9000", "GRACE": "2.5", "OPEN": "yes", "ADMIN": "42", "GUILD": "123"},
    )
    assert config.server.port == 9000
    assert config.server.shutdown_grace_seconds == 2.5
    assert config.platforms.telegram.allow_all is True
    assert config.platforms.telegram.allowed_users == (42, "bob")
    assert config.platforms.discord.command_guilds == (123,)
    assert config.model.temperature is None  # an empty expansion means unset


def test_literal_strings_are_not_coerced(load):
    assert errors_of(lambda: load('server: {port: "8080"}')) == [
        'server.port: expected an integer ≥ 0 and ≤ 65535, got "8080"'
        " (quoted, so it is text: drop the quotes and write port: 8080)"]


def test_coerced_value_still_obeys_bounds(load):
    errors = errors_of(lambda: load("server: {port: '${PORT}'}", env={"PORT": "99999"}))
    assert errors == ['server.port: expected an integer ≥ 0 and ≤ 65535, got "99999"']


# --- state_dir ----------------------------------------------------------------------------


def test_state_dir_default_is_under_home(isolated):
    assert load_config(env={}).config.state_dir == isolated / "home" / ".local" / "state" / "switchboard"


def test_state_dir_xdg_then_env_then_key(load, isolated):
    env = {"XDG_STATE_HOME": "/xdg/state"}
    assert load("", env).config.state_dir == Path("/xdg/state/switchboard")
    env["SWITCHBOARD_STATE_DIR"] = "~/mine"
    assert load("", env).config.state_dir == isolated / "home" / "mine"
    assert load("state_dir: /from/key", env).config.state_dir == Path("/from/key")


def test_relative_xdg_state_home_is_ignored(isolated):
    config, _ = load_config(env={"XDG_STATE_HOME": "relative"})
    assert config.state_dir == isolated / "home" / ".local" / "state" / "switchboard"


def test_relative_state_dir_key_is_relative_to_the_config_file(write, isolated):
    path = write("state_dir: data")
    assert load_config(path, env={}).config.state_dir == isolated / "data"


def test_state_dir_key_expands_user_and_variables(load, isolated):
    config, _ = load("state_dir: ~/s/${NAME}", env={"NAME": "bot"})
    assert config.state_dir == isolated / "home" / "s" / "bot"


@pytest.mark.parametrize(("text", "env"), [("state_dir:", {}), ("state_dir: ${SD:-}", {}),
                                          ("state_dir: ${SD}", {"SD": ""})])
def test_a_state_dir_left_empty_or_expanded_to_nothing_means_the_default(load, isolated, text, env):
    # An empty expansion is unset for a setting that may be unset; `state_dir:` already was.
    env = {**env, "SWITCHBOARD_STATE_DIR": str(isolated / "from-env")}
    assert load(text, env).config.state_dir == isolated / "from-env"


def test_a_state_dir_written_as_empty_text_is_still_an_error(load):
    assert errors_of(lambda: load('state_dir: ""')) == ['state_dir: expected a path, got ""']


def test_agent_workspace_expands_user_and_is_relative_to_the_config_file(write, isolated):
    # As state_dir: a service's working directory is often /, so "ws" must not mean /ws, nor "~/ws" a
    # directory named "~" there.
    assert load_config(write("agent: {workspace: ~/ws}"), env={}).config.agent.workspace == str(isolated / "home" / "ws")
    assert load_config(write("agent: {workspace: ws}"), env={}).config.agent.workspace == str(isolated / "ws")
    assert load_config(write("agent: {workspace: /abs/ws}"), env={}).config.agent.workspace == "/abs/ws"
    assert load_config(write("agent: {}"), env={}).config.agent.workspace is None  # <state_dir>/workspace


def test_model_script_expands_user_and_is_relative_to_the_config_file(write, isolated):
    # As state_dir and agent.workspace: the script beside the config file is found whatever the working
    # directory (here another one), and config check reads the same file the start will.
    (isolated / "replies.yaml").write_text("parent: []\n")
    (isolated / "home" / "replies.yaml").write_text("parent: []\n")
    scripted = "model: {{provider: scripted, script: {}}}"
    assert load_config(write(scripted.format("replies.yaml")), env={}).config.model.script == str(isolated / "replies.yaml")
    home = str(isolated / "home" / "replies.yaml")
    assert load_config(write(scripted.format("~/replies.yaml")), env={}).config.model.script == home
    errors = errors_of(lambda: load_config(write(scripted.format("missing.yaml")), env={}))
    assert errors == [f"model.script: cannot read {isolated / 'missing.yaml'} (No such file or directory)"]


# --- --set --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pair", "read"),
    [
        ("agent.system_prompt=Be brief: one line", "Be brief: one line"),  # was refused as a mapping
        ("model.name=my model #2", "my model #2"),  # was cut at the "#", as a comment
        ("agent.system_prompt=[beta] be brief", "[beta] be brief"),
        ("agent.system_prompt=[beta]", "[beta]"),
        ("agent.system_prompt=@alice and %d", "@alice and %d"),
        ('model.transcription.language="no"', "no"),  # quoted, as the hint for a bare no says to write it
        ("model.name='8080'", "8080"),
        ("model.name=", ""),
    ],
)
def test_a_set_value_that_is_no_number_boolean_or_null_is_a_string_as_written(pair, read):
    config, _ = load_config(None, env={}, overrides=[pair])
    key, _, _ = pair.partition("=")
    section, *rest = key.split(".")
    value = getattr(config, section)
    for part in rest:
        value = getattr(value, part)
    assert value == read


def test_a_set_number_boolean_or_null_is_what_it_looks_like():
    config, _ = load_config(None, env={}, overrides=["server.port=8081", "server.console=false",
                                                     "model.temperature=0.5", "model.temperature=null",
                                                     "server.shutdown_grace_seconds= 2.5 "])
    assert (config.server.port, config.server.console, config.model.temperature,
            config.server.shutdown_grace_seconds) == (8081, False, None, 2.5)


def test_a_set_list_is_text_the_setting_refuses():
    errors = errors_of(lambda: load_config(None, env={}, overrides=["plugins=[a.b]"]))
    assert errors == ['plugins: expected a list, got "[a.b]"']


def test_yaml_nested_too_deeply_is_one_line_not_a_traceback(write):
    for text in ("[" * 100_000, "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 80))):
        path = write(text)
        [error] = errors_of(lambda: load_config(path, env={}))
        assert error.startswith(f"{path}: invalid YAML: nested") and "\n" not in error


def test_aliases_that_stand_for_a_billion_values_are_refused_at_once(write):
    """Nine anchors each used nine times over: ~387 million values once copied out, which took
    minutes and gigabytes; counted by node, it is refused before anything is expanded."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = write("\n".join(lines) + "\n")
    [error] = errors_of(lambda: load_config(path, env={}))
    assert error == f"{path}: invalid YAML: its aliases stand for over 1,000,000 values"


def test_aliases_used_in_earnest_still_load(load):
    config, _ = load("x-port: &port 9001\nserver: {port: *port}\n")
    assert config.server.port == 9001


def test_an_infinite_number_is_refused_where_a_bound_is_expected(write):
    path = write("server: {shutdown_grace_seconds: .inf}\n")
    [error] = errors_of(lambda: load_config(path, env={}))
    assert error.startswith("server.shutdown_grace_seconds: expected a number ≥ 0, got")
