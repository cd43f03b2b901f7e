"""Images for a child's first turn: vision parts, text lines, and every way an image can be unusable."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent import _image_fit
from agent import images as images_module
from agent._image_fit import MAX_DECODES
from agent.images import (
    MAX_IMAGES,
    VISION_HINT,
    first_turn_content,
    first_turn_content_async,
    images_problem,
)
from agent.tools.file_scope import FileScope
from tests import swaps
from tests.pictures import GIF, JPEG, PNG, WEBP
from tests.polling import until

GOAL = "Describe the chart."
PNG_DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
URL = "https://example.com/chart.png"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "chart.png").write_bytes(PNG)
    (workspace / "photo.jpg").write_bytes(JPEG)
    (workspace / "anim.gif").write_bytes(GIF)
    (workspace / "pic.webp").write_bytes(WEBP)
    (workspace / "notes.png").write_text("not an image at all\n")  # the extension lies
    (workspace / "sub").mkdir()
    (tmp_path / "secret.png").write_bytes(PNG)  # outside the workspace
    (workspace / "escape.png").symlink_to(tmp_path / "secret.png")
    return workspace


def vision(images, ws: Path, **kw):
    return first_turn_content(GOAL, images, workspace=ws, supports_vision=True, **kw)


def text(images, ws: Path, **kw):
    return first_turn_content(GOAL, images, workspace=ws, supports_vision=False, **kw)


def urls(content) -> list[str]:
    assert isinstance(content, list) and content[0]["type"] == "text" and content[0]["text"].startswith(GOAL)
    return [part["image_url"]["url"] for part in content[1:] if part["type"] == "image_url"]


def skipped(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agent.images" and r.levelno == logging.WARNING]


# --- images_problem -----------------------------------------------------------------------------


@pytest.mark.parametrize("images", [None, [], ["a.png"], [URL, PNG_DATA_URL, "x.png"], ["a.png"] * MAX_IMAGES])
def test_acceptable_images(images):
    assert images_problem(images) is None


@pytest.mark.parametrize(
    ("images", "problem"),
    [
        (["a.png"] * 9, "a task may carry at most 8 images, got 9"),
        ("a.png", "images must be an array of local file paths, http(s) URLs or data:image/ URLs, got str"),
        ({"a": 1}, "images must be an array of local file paths, http(s) URLs or data:image/ URLs, got dict"),
        (["a.png", ""], "images[1] must be a non-empty string (a local path or URL), got ''"),
        (["  "], "images[0] must be a non-empty string (a local path or URL), got '  '"),
        (["a.png", 3], "images[1] must be a non-empty string (a local path or URL), got int"),
        ([None], "images[0] must be a non-empty string (a local path or URL), got NoneType"),
    ],
)
def test_image_problems(images, problem):
    assert images_problem(images) == problem


# --- vision -------------------------------------------------------------------------------------


def test_no_images_leaves_the_goal_alone(ws):
    assert vision([], ws) == GOAL
    assert text([], ws) == GOAL
    assert vision(None, ws) == GOAL


def test_local_png_becomes_a_data_url_part(ws):
    content = vision(["chart.png"], ws)
    assert content == [
        {"type": "text", "text": GOAL},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}},
    ]


def test_absolute_paths_inside_the_workspace_work(ws):
    assert urls(vision([str(ws / "chart.png")], ws)) == [PNG_DATA_URL]


@pytest.mark.parametrize(
    ("name", "mime", "data"),
    [("photo.jpg", "image/jpeg", JPEG), ("anim.gif", "image/gif", GIF), ("pic.webp", "image/webp", WEBP)],
)
def test_type_comes_from_magic_bytes(ws, name, mime, data):
    assert urls(vision([name], ws)) == [f"data:{mime};base64,{base64.b64encode(data).decode()}"]


def test_magic_bytes_beat_the_extension(ws):
    (ws / "really-a-png.jpg").write_bytes(PNG)
    assert urls(vision(["really-a-png.jpg"], ws)) == [PNG_DATA_URL]


def test_urls_pass_through_in_order(ws):
    images = [URL, "chart.png", "HTTP://example.com/a.gif", PNG_DATA_URL]
    assert urls(vision(images, ws)) == [URL, PNG_DATA_URL, "HTTP://example.com/a.gif", PNG_DATA_URL]


def test_entries_are_trimmed(ws):
    assert urls(vision(["  chart.png\n", f" {URL} "], ws)) == [PNG_DATA_URL, URL]


@pytest.mark.parametrize(
    "image",
    [
        "missing.png",  # does not exist
        "../secret.png",  # outside the workspace
        "escape.png",  # a symlink out of it
        "notes.png",  # not an image
        "sub",  # a directory
        "bad\x00name.png",  # not a usable path
        "data:image/png,notbase64",  # not base64
        "data:text/plain;base64,aGVsbG8=",  # not an image type
        "data:image/png;base64,@@@@",  # malformed base64
        "data:image/png;base64," + base64.b64encode(b"hello").decode(),  # says png, is not
        "https://example.com/has space.png",  # a URL with whitespace in it
    ],
)
def test_unusable_images_are_skipped_logged_and_named_to_the_model(ws, caplog, image):
    caplog.set_level(logging.WARNING, logger="agent.images")
    content = vision([image, "chart.png"], ws)
    assert urls(content) == [PNG_DATA_URL]
    assert len(skipped(caplog)) == 1 and "skipped" in skipped(caplog)[0]
    # Else a child asked to describe it would take the missing image for no image at all.
    # The log names it by kind (`<image>` where the reason quotes it): its name is the model's word, often a user's.
    why = skipped(caplog)[0].split(" skipped: ", 1)[1]
    said = content[0]["text"].replace(repr(image), "<image>").replace(image, "<image>")
    assert said == f"{GOAL}\n\n[Images that could not be used: {image.strip()!r} ({why})]".replace(
        repr(image), "<image>").replace(image, "<image>")
    assert image.strip() not in skipped(caplog)[0]


def test_outside_path_is_logged_with_the_reason(ws, caplog):
    caplog.set_level(logging.WARNING, logger="agent.images")
    vision(["../secret.png", "chart.png"], ws)
    assert "outside the workspace" in skipped(caplog)[0]


@pytest.mark.parametrize("supports_vision", [True, False])
def test_another_chats_attachment_is_not_this_chats_to_show_a_subagent(ws, supports_vision):
    # delegate_task is always offered: without this, a chat could have a subagent describe an image
    # another chat sent, which its own file tools refuse.
    for chat in ("1", "2"):
        (ws / "attachments" / "discord" / chat).mkdir(parents=True)
        (ws / "attachments" / "discord" / chat / "photo.png").write_bytes(PNG)
    scope = FileScope(("attachments/discord",), own="attachments/discord/1")
    unusable: list[tuple[str, str]] = []
    content = first_turn_content(GOAL, ["attachments/discord/2/photo.png", "attachments/discord/1/photo.png"],
                                 workspace=ws, supports_vision=supports_vision, unusable=unusable, file_scope=scope)
    ((refused, why),) = unusable
    assert refused == "attachments/discord/2/photo.png" and "is not this session's to use" in why
    shown = str(content)
    assert "attachments/discord/2" not in shown and (supports_vision or "attachments/discord/1/photo.png" in shown)


def test_files_over_the_limit_are_skipped(ws, caplog):
    caplog.set_level(logging.WARNING, logger="agent.images")
    big = len(JPEG) - 1  # the PNG is smaller
    assert vision(["photo.jpg"], ws, max_bytes=big) == f"{GOAL}\n\n[Image attached at: photo.jpg]\n{VISION_HINT}"
    data_url = f"data:image/jpeg;base64,{base64.b64encode(JPEG).decode()}"
    assert urls(vision([data_url, "chart.png"], ws, max_bytes=big)) == [
        "data:image/png;base64," + base64.b64encode(PNG).decode()
    ]
    assert any("larger than" in m for m in skipped(caplog))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_files_are_skipped(ws, caplog):
    caplog.set_level(logging.WARNING, logger="agent.images")
    (ws / "chart.png").chmod(0)
    assert vision(["chart.png"], ws) == GOAL
    assert any("cannot be read" in m for m in skipped(caplog))


def test_no_usable_image_falls_back_to_text(ws, caplog):
    caplog.set_level(logging.WARNING, logger="agent.images")
    # Too big for a vision part, but it exists, so the text form still names it.
    assert vision(["chart.png", "missing.png"], ws, max_bytes=4) == (
        f"{GOAL}\n\n[Image attached at: chart.png]\n{VISION_HINT}\n\n"
        "[Images that could not be used: 'missing.png' (does not exist or is not a regular file)]"
    )
    assert vision(["missing.png", "../secret.png"], ws) == (
        f"{GOAL}\n\n[Images that could not be used: 'missing.png' (does not exist or is not a regular file);"
        " '../secret.png' ('../secret.png' is outside the workspace)]"
    )


def test_an_image_no_one_can_decode_is_named_not_offered_to_a_vision_tool(ws, caplog):
    (ws / "broken.jpg").write_bytes(JPEG[:-40])
    unusable: list[tuple[str, str]] = []
    content = vision(["broken.jpg"], ws, unusable=unusable)
    assert content == GOAL  # no "[Image attached at: broken.jpg]": a vision tool could not read it either
    ((image, why),) = unusable
    assert image == "broken.jpg" and why.startswith("cannot be decoded as an image: ")
    assert vision(["broken.jpg"], ws) == f"{GOAL}\n\n[Images that could not be used: 'broken.jpg' ({why})]"


# --- text form ----------------------------------------------------------------------------------


def test_text_form_lists_images_and_hints_at_a_vision_tool(ws):
    assert text(["chart.png", URL, "photo.jpg"], ws) == (
        f"{GOAL}\n\n"
        "[Image attached at: chart.png]\n"
        f"[Image attached at: {URL}]\n"
        "[Image attached at: photo.jpg]\n"
        f"{VISION_HINT}"
    )
    assert "cannot see" in VISION_HINT and "vision tool" in VISION_HINT


def test_text_form_skips_unusable_images_and_data_urls(ws, caplog):
    caplog.set_level(logging.WARNING, logger="agent.images")
    content = text(["missing.png", "../secret.png", "escape.png", "notes.png", PNG_DATA_URL, "chart.png"], ws)
    shown, note = content.split(f"{VISION_HINT}\n\n")
    assert shown == f"{GOAL}\n\n[Image attached at: chart.png]\n"
    assert note.startswith("[Images that could not be used: 'missing.png' (") and note.count("; ") == 4
    assert len(skipped(caplog)) == 5
    assert all(len(m) < 300 for m in skipped(caplog))  # a data URL is not logged in full


def test_text_form_with_nothing_usable_is_the_goal_naming_the_images(ws):
    assert text(["missing.png", "sub"], ws) == (
        f"{GOAL}\n\n[Images that could not be used: 'missing.png' (does not exist or is not a regular file);"
        " 'sub' (does not exist or is not a regular file)]"
    )


# --- robustness ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "images",
    [
        [None, 5, b"x", "", "   ", "chart.png"],
        "chart.png",  # a bare string is one image, not nine characters
        42,
        [["nested"]],
        ["\x00", "a" * 10_000, "data:", "http://", "../../../../etc/passwd"],
    ],
)
@pytest.mark.parametrize("supports_vision", [True, False])
def test_never_raises_on_garbage(ws, images, supports_vision):
    content = first_turn_content(GOAL, images, workspace=ws, supports_vision=supports_vision)
    assert content == GOAL or isinstance(content, (str, list))


def test_a_bare_string_is_one_image(ws):
    assert urls(vision("chart.png", ws)) == [PNG_DATA_URL]


def test_a_broken_workspace_never_raises(tmp_path, caplog):
    for workspace in (tmp_path / "nope", "not-a-path-object", None):
        for supports_vision in (True, False):
            content = first_turn_content(
                GOAL, ["chart.png", URL], workspace=workspace, supports_vision=supports_vision
            )
            assert content == GOAL or URL in str(content)


async def test_async_variant_runs_off_the_loop(ws):
    assert urls(await first_turn_content_async(GOAL, ["chart.png"], workspace=ws, supports_vision=True)) == [
        PNG_DATA_URL
    ]
    assert await first_turn_content_async(GOAL, [], workspace=ws, supports_vision=False) == GOAL


# --- a path changed between its check and its open ----------------------------------------------


@pytest.mark.parametrize("swap, why", [
    ("symlink", "changed after it was checked: a symlink is now where a folder or the file was"),
    ("fifo", "does not exist or is not a regular file"),
])
@pytest.mark.parametrize("supports_vision", [True, False])
async def test_an_image_changed_after_its_check_is_skipped_not_read_or_waited_on(
        ws, monkeypatch, swap, why, supports_vision):
    target = ws / "chart.png"
    check = images_module.resolve_in_workspace

    def checked_then_changed(*args):
        resolved = check(*args)
        if resolved == target:  # it exists and is a PNG; it changes just before it is opened
            swaps.swap_at_next_open(lambda: swaps.symlink_to(target, ws.parent / "secret.png") if swap == "symlink"
                                    else swaps.fifo(target))
        return resolved

    monkeypatch.setattr(images_module, "resolve_in_workspace", checked_then_changed)
    unusable: list[tuple[str, str]] = []
    try:
        async with asyncio.timeout(5):
            content = await first_turn_content_async(GOAL, ["chart.png", URL], workspace=ws,
                                                     supports_vision=supports_vision, unusable=unusable)
    finally:
        swaps.disarm()
        swaps.unblock(target)
    assert unusable == [("chart.png", why)]
    assert content == ([{"type": "text", "text": GOAL}, {"type": "image_url", "image_url": {"url": URL}}]
                       if supports_vision else f"{GOAL}\n\n[Image attached at: {URL}]\n{VISION_HINT}")


# --- waiting for a decode -----------------------------------------------------------------------


async def test_images_waiting_for_a_decode_leave_the_loops_threads_to_other_work(ws, monkeypatch):
    # A 2-core machine's loop has min(32, cores + 4) = 6 threads for every asyncio.to_thread.
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(6))
    held, decoding = threading.Event(), []
    fit = _image_fit._fit

    def held_fit(*args):
        decoding.append(threading.get_ident())
        held.wait()
        return fit(*args)

    monkeypatch.setattr(_image_fit, "_fit", held_fit)
    # Six chats' photos: two decoding, four waiting for their turn.
    fits = [asyncio.create_task(first_turn_content_async(GOAL, ["chart.png"], workspace=ws, supports_vision=True))
            for _ in range(6)]
    ran = 0

    def other_work() -> None:
        nonlocal ran
        ran += 1

    try:
        await until(lambda: len(decoding) >= MAX_DECODES)  # decode threads: no event to wait for
        async with asyncio.timeout(5):
            for _ in range(10):
                await asyncio.to_thread(other_work)
        assert ran == 10 and len(decoding) == MAX_DECODES  # the decodes still full, other work done meanwhile
    finally:
        held.set()
    assert [urls(content) for content in await asyncio.gather(*fits)] == [[PNG_DATA_URL]] * 6
    assert len(decoding) == 6
