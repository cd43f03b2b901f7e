"""Tool names a model made up (``functions.read_file``, one with spaces, one over 64 characters) are kept in
the conversation as model APIs take them back: OpenAI refuses every request holding a past call whose name is
not 1 to 64 letters, digits, ``_`` or ``-``, so the chat was refused until /new. Through the gateway:
tests/gateway/test_model_odd_endings.py."""

from __future__ import annotations

import copy

from agent._tool_calls import _mend_history, _sendable_name


def test_a_sendable_name_is_kept_as_it_is():
    name = "read_file-2"
    assert _sendable_name(name) is name
    assert _sendable_name("x" * 64) == "x" * 64


def test_each_refused_character_becomes_an_underscore_and_the_name_is_cut_at_64():
    assert _sendable_name("functions.read_file") == "functions_read_file"
    assert _sendable_name("search the web") == "search_the_web"
    assert _sendable_name("lire_fichier_été") == "lire_fichier__t_"
    assert _sendable_name("y" * 70) == "y" * 64


def stored(name: str) -> list[dict]:
    return [
        {"role": "user", "content": "read a.txt"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": '{"path": "a.txt"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"Error: unknown tool {name!r}"},
        {"role": "assistant", "content": "Sorry."},
    ]


def test_a_stored_call_of_a_made_up_name_is_mended_keeping_its_pairing_and_arguments():
    # A transcript an older version stored: the name is mended once, as it is loaded.
    messages = stored("functions.read_file")
    assert _mend_history(messages) == (1, 0)
    [call] = messages[1]["tool_calls"]
    assert call == {"id": "c1", "type": "function",
                    "function": {"name": "functions_read_file", "arguments": '{"path": "a.txt"}'}}
    assert messages[2] == stored("functions.read_file")[2]  # its result still answers it, quoting the name


def test_a_stored_sendable_name_is_left_alone():
    messages = stored("read_file")
    kept = copy.deepcopy(messages)
    assert _mend_history(messages) == (0, 0)
    assert messages == kept
