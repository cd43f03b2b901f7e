"""The console cuts a goal or message's preview (`PREVIEW` characters) and a child's error (`ERROR`) between
characters as a reader sees them: a cut between a flag's two regional indicators showed a lone letter, one between
a thumbs-up and its skin tone a yellow thumb, one between a letter and its accent the bare letter, one inside a
family one of its people."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.console.snapshot import ERROR, PREVIEW
from gateway.testing import make_config, settled
from platforms.base import Forbidden
from tests.gateway.observing import FailingAdapter, served
from tests.gateway.test_console import state

CLUSTERS = {
    "thumb": "\U0001f44d\U0001f3fd",  # a thumbs-up and a skin tone: two code points
    "flag": "\U0001f1eb\U0001f1f7",  # two regional indicators
    "accent": "e\u0301",  # e and a combining acute accent
    "family": "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # three people joined by zero-width joiners
}


def straddling(name: str, limit: int) -> str:
    """A text, starting with ``name``, whose cluster of that name starts one character before where a cut to
    ``limit`` (ellipsis included) falls."""
    return name + "a" * (limit - 2 - len(name)) + CLUSTERS[name] + "b" * 10


def cut(text: str, limit: int) -> str:
    """``text`` cut before the cluster it straddles: none of it shown rather than a part."""
    return text[:limit - 2] + "…"


async def test_previews_are_cut_between_whole_characters(tmp_path, gateways) -> None:
    texts = [straddling(name, PREVIEW) for name in CLUSTERS]
    chat = FailingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": t}] for t in texts]})
    async with served(gateway) as server:
        for _ in texts:
            chat.fail_next(Forbidden("the bot was blocked"))
            await chat.say("go")
            await settled(gateway)
        failed = sorted((await state(server.url))["outbox"]["failed_messages"], key=lambda m: m["id"])
    assert [m["text"] for m in failed] == [cut(t, PREVIEW) for t in texts]


async def test_goals_and_errors_of_children_are_cut_between_whole_characters(tmp_path, gateways) -> None:
    goals = {straddling(name, PREVIEW): name for name in CLUSTERS}
    errors = {name: straddling(name, ERROR) for name in CLUSTERS}
    tasks = {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in goals]}}]}
    chat = FailingAdapter()
    model = ScriptedModel({"parent": [[tasks, {"text": "on it"}], [{"text": "all failed"}]],
                           "leaf": lambda request: {"error": "bad_request",
                                                    "message": errors[goals[request.metadata["goal"]]]}})
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "background"}), [chat], model=model)
    async with served(gateway) as server:
        await chat.say("compare")
        await chat.wait_for(lambda: "all failed" in "".join(chat.texts()))
        await settled(gateway)
        [delegation] = (await state(server.url))["delegations"]
    shown = {t["goal"]: t["error"] for t in delegation["tasks"]}
    assert shown == {cut(goal, PREVIEW): cut(errors[name], ERROR) for goal, name in goals.items()}
