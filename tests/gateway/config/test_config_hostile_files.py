"""A broken or hostile config file costs little to refuse and is refused in one line naming the file
(and line) and the fix: a file far too big, text that is not UTF-8 or holds a character YAML
forbids, merges or aliases that copy out gigabytes from kilobytes, and, at the usual locations,
something in the file's place that is no file (the defaults ran instead, silently)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from yaml.nodes import MappingNode, SequenceNode

from gateway.cli import EXIT_CONFIG, main
from gateway.config import ConfigError, load_config
from gateway.config.interpolate import MAX_TEXT, TOO_MUCH_TEXT
from gateway.config.loader import MAX_BYTES, locate_config
from gateway.config.strict_yaml import MAX_MERGED, StrictLoader


def errors_of(path: Path, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path, env=env or {})
    return info.value.errors


def test_a_file_over_the_size_a_config_file_has_is_refused_before_it_is_parsed(tmp_path):
    # A log or a dump named by mistake: PyYAML took minutes and gigabytes on one of tens of megabytes.
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * MAX_BYTES + "\n")
    assert errors_of(path) == [f"{path}: over {MAX_BYTES:,} bytes, more than a config file holds: is it the right"
                               " file?"]


def test_text_that_is_not_utf8_is_named_by_line_and_column_with_the_fix(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("server:\n  host: héhé\xff\n".encode("latin-1"))
    assert errors_of(path) == [f"{path}:2:10: not UTF-8 text (the byte 0xe9): save the file as UTF-8"]


def test_a_utf16_file_is_told_to_be_saved_as_utf8(tmp_path):
    path = tmp_path / "notepad.yaml"
    path.write_bytes("server:\n  port: 8080\n".encode("utf-16"))
    assert errors_of(path) == [f"{path}: the file is UTF-16 text: save it as UTF-8"]


def test_a_utf8_byte_order_mark_is_read_past(tmp_path):
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfserver:\n  port: 8081\n")
    assert load_config(path, env={}).config.server.port == 8081


@pytest.mark.parametrize("character", ["\x00", "\x07", "\x1b"])
def test_a_character_yaml_forbids_is_one_line_at_its_line(tmp_path, character):
    # PyYAML's words ran over two lines, the second naming "<unicode string>" and an offset into it.
    path = tmp_path / "control.yaml"
    path.write_text(f"server:\n  host: ab{character}c\n", encoding="utf-8")
    assert errors_of(path) == [f"{path}:2:11: invalid YAML: the character U+{ord(character):04X}, which YAML does"
                               " not allow in a file: delete it"]


def _merge_before_6_0_4(self, node):
    """`SafeConstructor.flatten_mapping` as PyYAML 6.0 to 6.0.3 have it (``PyYAML>=6.0`` installs any)."""
    merge = []
    index = 0
    while index < len(node.value):
        key_node, value_node = node.value[index]
        if key_node.tag == "tag:yaml.org,2002:merge":
            del node.value[index]
            if isinstance(value_node, MappingNode):
                self.flatten_mapping(value_node)
                merge.extend(value_node.value)
            elif isinstance(value_node, SequenceNode):
                submerge = []
                for subnode in value_node.value:
                    self.flatten_mapping(subnode)
                    submerge.append(subnode.value)
                submerge.reverse()
                for value in submerge:
                    merge.extend(value)
        else:
            index += 1
    if merge:
        node.value = merge + node.value


def test_a_mapping_merged_twice_over_twenty_deep_is_merged_once_whatever_pyyaml_is_installed(monkeypatch):
    # Each level merged the one below twice: with PyYAML before 6.0.4, 2**17 - 1 pairs from a few
    # hundred bytes (2**23 took 12 s and 288 MB), doubling with each line.
    monkeypatch.setattr(yaml.constructor.SafeConstructor, "flatten_mapping", _merge_before_6_0_4)
    levels = 16
    lines = ["l0: &l0 {k0: 0}"]
    lines += [f"l{i}: &l{i} {{<<: [*l{i - 1}, *l{i - 1}], k{i}: {i}}}" for i in range(1, levels + 1)]
    loader = StrictLoader("\n".join(lines) + "\n")
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    last = root.value[-1][1]
    assert len(last.value) == levels + 1
    assert data[f"l{levels}"] == {f"k{i}": i for i in range(levels + 1)}


def test_merges_that_copy_out_over_a_million_values_are_refused_before_they_are_built(tmp_path):
    # Every PyYAML copies the merged mapping into each mapping that merges it: 2,000 keys into 2,000
    # mappings, from 50 kB, took seconds and a gigabyte before the count of what was built refused it.
    keys = 2_000
    lines = ["a: &a {" + ", ".join(f"k{i}: 1" for i in range(keys)) + "}", "b:"]
    lines += ["  - {<<: *a}"] * (MAX_MERGED // keys + 1)
    path = tmp_path / "merges.yaml"
    path.write_text("\n".join(lines) + "\n")
    [error] = errors_of(path)
    assert error.startswith(f"{path}:") and error.endswith(
        f": invalid YAML: its merges (<<) copy out over {MAX_MERGED:,} values")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("{<<: [{abc: 1}, {abc: 2}]}", {"abc": 1}),  # the earlier mapping in the list wins, as YAML says
        ("{<<: [{a: 1}, {a: 2}]}", {"a": 1}),
        ("{<<: [{abc: 1}, {abc: 2}], abc: 3}", {"abc": 3}),  # a key of its own wins over any merged
        ("b: &b {x: 1, y: 1}\nc: &c {<<: *b, x: 2}\nd: {<<: [*c, *b], z: 0}\n",
         {"b": {"x": 1, "y": 1}, "c": {"x": 2, "y": 1}, "d": {"x": 2, "y": 1, "z": 0}}),
    ],
)
def test_merges_read_as_yaml_says(text, want):
    assert yaml.load(text, Loader=StrictLoader) == want  # noqa: S506 - a SafeLoader subclass


def test_merges_in_earnest_still_load(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("x-limits: &limits {max_concurrent_children: 3, max_iterations: 20}\n"
                    "delegation: {<<: *limits, max_iterations: 9}\n")
    config = load_config(path, env={}).config
    assert (config.delegation.max_concurrent_children, config.delegation.max_iterations) == (3, 9)


def test_a_long_text_aliased_over_and_over_is_refused_at_the_key_it_passes_the_limit(tmp_path):
    # 106 kB of file came to 200 MB in memory, and in `config check`'s output.
    copies = MAX_TEXT // 100_000 + 1
    path = tmp_path / "aliases.yaml"
    path.write_text(f'x-long: &long "{"u" * 100_000}"\n'
                    f"platforms:\n  web:\n    allowed_users: [{', '.join(['*long'] * copies)}]\n")
    errors = errors_of(path)
    assert errors == [f"platforms.web.allowed_users[{copies - 2}]: {TOO_MUCH_TEXT}"]


def test_a_variable_referred_to_over_and_over_is_refused_before_its_value_is_built(tmp_path):
    path = tmp_path / "refs.yaml"
    path.write_text('agent:\n  system_prompt: "' + "${LONG}" * 11 + '"\n')
    long = "v" * (MAX_TEXT // 10)
    assert errors_of(path, {"LONG": long}) == [f"agent.system_prompt: {TOO_MUCH_TEXT}"]


@pytest.fixture
def in_place_of_the_file(isolated):
    """Something at ./switchboard.yaml, the working directory's implicit config file."""
    return Path("switchboard.yaml").absolute()


FIX = "put the file there, or name the file to read with --config or $SWITCHBOARD_CONFIG"


def test_a_directory_where_the_implicit_file_would_be_is_an_error_not_the_defaults(in_place_of_the_file):
    # As Docker leaves for a bind mount of a file that did not exist: the gateway ran on the defaults.
    in_place_of_the_file.mkdir()
    with pytest.raises(ConfigError) as info:
        locate_config(None, {})
    assert info.value.errors == [f"config file {in_place_of_the_file} is a directory, not a file: {FIX}"]


def test_a_link_to_nothing_where_the_implicit_file_would_be_is_an_error_not_the_defaults(in_place_of_the_file):
    in_place_of_the_file.symlink_to("/nonexistent/switchboard.yaml")
    with pytest.raises(ConfigError) as info:
        locate_config(None, {})
    assert info.value.errors == [f"config file {in_place_of_the_file} is a symbolic link to"
                                 f" /nonexistent/switchboard.yaml, which does not exist: {FIX}"]


def test_a_fifo_where_the_user_file_would_be_is_an_error_not_the_defaults(isolated):
    folder = isolated / "home" / ".config" / "switchboard"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "config.yaml")
    with pytest.raises(ConfigError) as info:
        locate_config(None, {})
    assert info.value.errors == [f"config file {folder / 'config.yaml'} is not a file: {FIX}"]


def test_a_link_to_a_file_is_read(isolated):
    real = isolated / "real.yaml"
    real.write_text("server: {port: 8082}\n")
    Path("switchboard.yaml").symlink_to(real)
    assert load_config(None, env={"HOME": str(isolated / "home")}).config.server.port == 8082


def test_a_python_tag_is_never_constructed(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "tag.yaml"
    path.write_text(f'x: !!python/object/apply:os.mkdir ["{marker}"]\n')
    [error] = errors_of(path)
    assert "could not determine a constructor for the tag" in error and not marker.exists()


@pytest.mark.parametrize("broken", ["big", "merges", "not utf-8"])
def test_a_start_on_such_a_file_exits_78_with_one_line_and_config_check_1(tmp_path, capsys, broken):
    path = tmp_path / "config.yaml"
    if broken == "big":
        path.write_text("# " + "x" * MAX_BYTES + "\n")
    elif broken == "merges":
        path.write_text("a: &a {" + ", ".join(f"k{i}: 1" for i in range(2_000)) + "}\nb:\n"
                        + "  - {<<: *a}\n" * (MAX_MERGED // 2_000 + 1))
    else:
        path.write_bytes(b"agent: {system_prompt: caf\xe9}\n")
    assert main(["ask", "--config", str(path), "hello"]) == EXIT_CONFIG
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith(f"error: {path}") and err[1].startswith("switchboard: the configuration")
    assert main(["config", "check", str(path)]) == 1
    assert capsys.readouterr().err.splitlines()[0] == err[0]


NESTED = ("the fallback of ${SECRET:-…} holds a ${, but a fallback is text, taken as written: a variable in it is not"
          " expanded; write the text itself")


@pytest.mark.parametrize("env", [{}, {"SECRET": "s3cret-value"}, {"OTHER": "o"}])
def test_a_variable_in_a_fallback_is_an_error_not_a_guessable_text(tmp_path, env):
    # `${SECRET:-${OTHER}}` was the fallback "${OTHER" then "}": the route's secret, the text "${OTHER}".
    path = tmp_path / "nested.yaml"
    path.write_text("platforms:\n  webhook:\n    enabled: true\n    routes:\n"
                    '      main: {secret: "${SECRET:-${OTHER}}"}\n')
    errors = errors_of(path, env)
    assert f"platforms.webhook.routes.main.secret: {NESTED}" in errors
    assert not any("s3cret-value" in error for error in errors)


BASE_60 = ("a number written with a colon, which YAML 1.1 reads as base 60 (1:30 as 90): quote it if it is text, or"
           " write the number meant")


@pytest.mark.parametrize(("text", "where"), [("platforms:\n  web: {allowed_users: [alice, 12:30]}\n", "2:32"),
                                             ("model:\n  name: 1:30.5\n", "2:9")])
def test_a_number_with_a_colon_is_not_silently_read_as_base_60(tmp_path, text, where):
    # `12:30` in an allowed_users list let the user with id 750 in.
    path = tmp_path / "base60.yaml"
    path.write_text(text)
    assert errors_of(path) == [f"{path}:{where}: invalid YAML: {BASE_60}"]


def test_a_quoted_time_is_text(tmp_path):
    path = tmp_path / "quoted.yaml"
    path.write_text('platforms:\n  web: {allowed_users: ["12:30"]}\n')
    assert load_config(path, env={}).config.platforms.web.allowed_users == ("12:30",)
