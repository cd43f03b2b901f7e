"""A chat's commands are answered in the order sent, a plugin's that takes its time too (a pasted block of commands
runs them one by one); only /stop and /new are answered at once, and a /stop lets the waiting answers go."""

from __future__ import annotations

import asyncio
import io
import os

import pytest

from gateway.testing import RecordingAdapter, make_config, settled
from platforms.local import LocalAdapter
from tests.plugin_modules import plugin_module
from tests.polling import until

PLUGIN = """
import asyncio

gates = {}
ended = []


def gate(name):
    return gates.setdefault(name, asyncio.Event())


async def slow(args, context):
    await gate(args).wait()
    ended.append(args)
    return f"slow {args}"


def quick(args, context):
    ended.append(args)
    return f"quick {args}"


def register(ctx):
    ctx.register_command("slow", slow)
    ctx.register_command("quick", quick)
"""


async def started(tmp_path, monkeypatch, gateways, chat):
    plugin = plugin_module(tmp_path, monkeypatch, "ordered_commands_plugin", PLUGIN)
    gateway = await gateways(make_config(tmp_path, plugins=["ordered_commands_plugin"]), [chat],
                             script={"parent": [[{"text": "hi"}]]})
    return plugin, gateway


def short(texts: list[str]) -> list[str]:
    return ["help" if text.startswith("/stop — ") else text for text in texts]


async def test_a_pasted_block_of_commands_is_answered_in_the_order_sent(tmp_path, monkeypatch, gateways):
    # /help, answered at once, came before the slow command sent ahead of it, and each plugin command's answer
    # when its handler ended: "help, 2nd, 1st, 4th" for four lines piped into `switchboard chat`.
    chat = RecordingAdapter()
    plugin, gateway = await started(tmp_path, monkeypatch, gateways, chat)
    for text in ("/slow a", "/quick b", "/help", "/slow c", "/agents"):
        await chat.say(text)
    plugin.gate("c").set()  # the later ones are ready first: their answers still wait for a's
    await until(lambda: sorted(plugin.ended) == ["b", "c"])
    plugin.gate("a").set()
    await chat.wait_for(lambda: len(chat.messages) == 5)
    assert short(chat.texts()) == ["slow a", "quick b", "help", "slow c", "No subagents in this chat."]
    await settled(gateway)
    await chat.say("/help")  # the line is through: answered at once, as ever
    await chat.wait_for(lambda: len(chat.messages) == 6)


async def test_other_chats_and_messages_do_not_wait_for_a_slow_command(tmp_path, monkeypatch, gateways):
    chat = RecordingAdapter()
    plugin, gateway = await started(tmp_path, monkeypatch, gateways, chat)
    await chat.say("/slow a")
    await chat.say("/help", chat="other")
    await chat.say("hello")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    assert sorted(short(chat.texts())) == ["help", "hi"]
    plugin.gate("a").set()
    await chat.wait_for(lambda: len(chat.messages) == 3)


@pytest.mark.parametrize("command", ["/stop", "/new"])
async def test_stop_and_new_are_answered_at_once_behind_a_command_that_hangs(tmp_path, monkeypatch, gateways,
                                                                             command):
    chat = RecordingAdapter()
    plugin, gateway = await started(tmp_path, monkeypatch, gateways, chat)
    await chat.say("/slow a")
    await chat.say("/quick b")
    await chat.say(command)
    await chat.wait_for(lambda: chat.messages)
    assert chat.texts()[0].startswith("Nothing was running." if command == "/stop" else "Started a new session.")
    await chat.say("/help")
    if command == "/stop":
        # Let go by the stop: what waited behind the hung handler is answered, and what comes after it too.
        await chat.wait_for(lambda: len(chat.messages) == 3)
    else:
        await until(lambda: plugin.ended == ["b"])
    plugin.gate("a").set()
    await chat.wait_for(lambda: len(chat.messages) == 4)
    await settled(gateway)
    later = short(chat.texts()[1:])
    if command == "/stop":  # those sent before it as each is ready, those after it waiting for none of them
        assert (sorted(later[:2]), later[2]) == (["help", "quick b"], "slow a")
    else:
        assert later == ["slow a", "quick b", "help"]


async def test_the_terminal_chat_answers_commands_piped_in_together_in_their_order(tmp_path, monkeypatch, gateways):
    # `printf '/slow a\n/quick b\n/help\n/slow c\n' | switchboard chat` printed help, quick b, slow c, slow a.
    read_fd, write_fd = os.pipe()
    reader, output, ended = os.fdopen(read_fd), io.StringIO(), asyncio.Event()
    terminal = LocalAdapter(input=reader, output=output, user="me", on_exit=ended.set, on_input_end=ended.set)
    plugin, gateway = await started(tmp_path, monkeypatch, gateways, terminal)
    try:
        plugin.gate("c").set()
        os.write(write_fd, b"/slow a\n/quick b\n/help\n/slow c\n")
        os.close(write_fd)
        await asyncio.wait_for(ended.wait(), 5)
        await until(lambda: sorted(plugin.ended) == ["b", "c"])
        plugin.gate("a").set()
        await until(lambda: "slow a" in output.getvalue() and "slow c" in output.getvalue())
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
        reader.close()
    shown = output.getvalue()
    assert shown.index("slow a") < shown.index("quick b") < shown.index("/stop — ") < shown.index("slow c"), shown


async def test_a_stop_while_a_ready_answer_waits_behind_a_hung_one_does_not_run_its_handler_again(
        tmp_path, monkeypatch, gateways):
    # b's handler has done its work (a deploy, say) and its answer waits for a's, which hangs past the stop: the stop
    # lost b's answer, and the next start ran b's handler again.
    chat = RecordingAdapter()
    plugin, gateway = await started(tmp_path, monkeypatch, gateways, chat)
    await chat.say("/slow a")
    await chat.say("/quick b")
    await until(lambda: plugin.ended == ["b"])
    await gateway.stop(grace=0)
    plugin.gate("a").set()
    chat2 = RecordingAdapter()
    gateway2 = await gateways(make_config(tmp_path, plugins=["ordered_commands_plugin"]), [chat2],
                              script={"parent": [[{"text": "hi"}]]})
    await chat2.wait_for(lambda: "slow a" in chat2.texts())
    await settled(gateway2)
    assert plugin.ended.count("b") == 1, plugin.ended
    assert [*chat.texts(), *chat2.texts()].count("quick b") == 1


def test_answers_come_in_the_order_sent_between_stops_each_once_whatever_order_handlers_end():
    # A property of `CommandAnswers` alone: handlers ending in any order, /stops anywhere among them.
    from types import SimpleNamespace

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from gateway.command_answers import CommandAnswers

    @settings(max_examples=300, deadline=None)
    @given(st.integers(1, 7).flatmap(lambda n: st.tuples(
        st.permutations(range(n)), st.lists(st.booleans(), min_size=n, max_size=n))))
    def check(case):
        ends, stops_before = case

        async def run():
            gates = {i: asyncio.Event() for i in range(len(ends))}
            said: list[int] = []

            class Fake:
                async def run(self, session, command, inbound):
                    await gates[command].wait()
                    return str(command)

            class Inbox:  # where answers waiting in line are kept
                def __init__(self):
                    self.kept = {}

                def keep_answer(self, platform, event_id, text):
                    self.kept[event_id] = text

                def kept_answer(self, platform, event_id):
                    return self.kept.get(event_id)

            inbox = Inbox()
            answers = CommandAnswers(None, inbox, Fake(), None, accepting=lambda: True, clock=None)

            async def answer_long(inbound, text, turn_id):
                await asyncio.sleep(0)
                said.append(int(text))

            answers._answer_long = answer_long
            session = SimpleNamespace(key="chat")
            segments, segment = [], []
            for i in range(len(ends)):
                if stops_before[i]:
                    answers.let_go(session)
                    segments.append(segment)
                    segment = []
                answers.answer_in_line(session, SimpleNamespace(platform="p", event_id=str(i), is_private=True,
                                                               user_id="u"), i)
                segment.append(i)
            segments.append(segment)
            for i in ends:
                gates[i].set()
                for _ in range(3):
                    await asyncio.sleep(0)
            async with asyncio.timeout(5):
                while answers.aside:
                    await asyncio.sleep(0)
            assert sorted(said) == list(range(len(ends)))
            # Those sent before a /stop go each as it is ready; those after the last one, in order.
            assert [i for i in said if i in segments[-1]] == segments[-1], (said, segments)
            assert answers._lines == {}
            assert all(text == event for event, text in inbox.kept.items())  # each its own command's answer

        asyncio.run(run())

    check()


async def test_in_a_group_another_members_command_does_not_wait_for_one_members_slow_one(tmp_path, monkeypatch,
                                                                                        gateways):
    # One line for the whole group held Bob's /help behind Alice's hung /slow, with /stop (which also stops the
    # chat's turn) the only way out; a pasted block is one member's.
    chat = RecordingAdapter()
    plugin, gateway = await started(tmp_path, monkeypatch, gateways, chat)
    await chat.say("/slow a", private=False, user="alice", message_id="m1")
    await chat.say("/quick x", private=False, user="alice", message_id="m2")
    await chat.say("/quick b", private=False, user="bob", name="bob", message_id="m3")
    await chat.wait_for(lambda: len(chat.messages) == 1)
    assert chat.texts() == ["quick b"]  # Alice's /quick x still waits for her /slow a
    plugin.gate("a").set()
    await chat.wait_for(lambda: len(chat.messages) == 3)
    assert chat.texts() == ["quick b", "slow a", "quick x"]
    await settled(gateway)
