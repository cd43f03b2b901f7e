"""delegate_task's `images` in a session without the file tools (a chat platform's default): a subagent is shown
no workspace image its parent could not read, only URLs and the files its own chat sent."""

import base64
import json
import os

import pytest

from agent import ToolContext, ToolError
from agent.tools.file_scope import SERVICE as FILE_SCOPE
from agent.tools.file_scope import FileScope
from lifecycle import delegate_tool
from tests.pictures import PNG

OWN = "attachments/telegram/42"
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


@pytest.fixture
async def chat(make_env):
    env = await make_env(delegate=True, enabled=["delegation", "web"])  # no `file`, as on a chat platform
    assert "read_file" not in env.parent.tools
    workspace = env.parent.workspace
    for folder in (OWN, "attachments/telegram/7", "private"):
        (workspace / folder).mkdir(parents=True)
        (workspace / folder / "photo.png").write_bytes(PNG)
    env.parent.services[FILE_SCOPE] = FileScope(("attachments/telegram",), own=OWN)
    env.child_model.supports_vision = True
    return env


async def delegate(env, args, *, mode="inline", on_dispatch=None):
    tool = delegate_tool(env.service, mode=mode, on_dispatch=on_dispatch)
    return await tool.invoke(args, ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1"))


def first_message(env, goal):
    return [r for r in env.child_model.requests if goal in r.metadata["goal"]][0].messages[1]["content"]


@pytest.mark.parametrize("image", ["private/photo.png", "./private/../private/photo.png",
                                   "attachments/telegram/7/photo.png", "missing.png"])
async def test_a_workspace_image_the_parent_cannot_read_is_refused_and_nothing_starts(chat, image):
    with pytest.raises(ToolError) as refused:
        await delegate(chat, {"tasks": [{"goal": "fine"}, {"goal": "[show-prompt] peek", "images": [PNG_URL, image]}]})
    assert str(refused.value) == (
        f"No subagent was started: task 1: images[1] {image!r} is a workspace path, and this session has no file "
        "tools to read workspace files, so no subagent may be shown it either: give only http(s) URLs, "
        f"data:image/ URLs or the files this chat sent ({OWN}/).")
    assert chat.child_model.requests == []


async def test_a_background_call_is_refused_before_anything_is_dispatched(chat):
    dispatched = []
    with pytest.raises(ToolError, match="No subagent was started: task 0: images\\[0\\] 'private/photo.png'"):
        await delegate(chat, {"goal": "x", "images": ["private/photo.png"]}, mode="background",
                       on_dispatch=dispatched.append)
    assert dispatched == [] and chat.child_model.requests == []


async def test_the_chats_own_files_and_urls_still_reach_the_subagent(chat):
    images = [f"{OWN}/photo.png", "https://example.com/a.png", PNG_URL]
    await delegate(chat, {"goal": "[show-prompt] look", "images": images})
    parts = first_message(chat, "look")
    assert [p["image_url"]["url"] for p in parts if p["type"] == "image_url"] == [
        PNG_URL, "https://example.com/a.png", PNG_URL]


async def test_a_symlink_in_the_chats_folder_leads_nowhere(chat):
    os.symlink(chat.parent.workspace / "private" / "photo.png", chat.parent.workspace / OWN / "link.png")
    with pytest.raises(ToolError, match=f"images\\[0\\] '{OWN}/link.png' is a workspace path"):
        await delegate(chat, {"goal": "x", "images": [f"{OWN}/link.png"]})


async def test_an_own_folder_that_is_a_symlink_is_none_of_the_chats(chat):
    workspace = chat.parent.workspace
    os.rename(workspace / OWN, workspace / "moved")
    os.symlink(workspace / "private", workspace / OWN)
    with pytest.raises(ToolError, match="is a workspace path"):
        await delegate(chat, {"goal": "x", "images": [f"{OWN}/photo.png"]})


async def test_without_a_folder_of_its_own_only_urls_may_be_given(make_env):
    env = await make_env(delegate=True, enabled=["delegation"])
    (env.parent.workspace / "photo.png").write_bytes(PNG)
    with pytest.raises(ToolError, match="give only http\\(s\\) URLs or data:image/ URLs\\.$"):
        await delegate(env, {"goal": "x", "images": ["photo.png"]})
    (result,) = json.loads(await delegate(env, {"goal": "y", "images": ["https://example.com/a.png"]}))["results"]
    assert result["status"] == "completed"


async def test_a_parent_with_the_file_tools_still_shows_what_it_may_read(make_env):
    env = await make_env(delegate=True, enabled=["delegation", "file"])
    (env.parent.workspace / "photo.png").write_bytes(PNG)
    env.child_model.supports_vision = True
    await delegate(env, {"goal": "[show-prompt] mine", "images": ["photo.png"]})
    assert [p["image_url"]["url"] for p in first_message(env, "mine") if p["type"] == "image_url"] == [PNG_URL]
