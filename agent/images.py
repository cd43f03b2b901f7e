"""Images for a turn's first message: native image parts for vision models, path lines otherwise.

Used for a subagent's task (``delegate_task`` ``images``) and for the photos a chat
user sends. Best effort by design: images are a hint, never a reason for a turn to
fail. An unusable image is skipped with a logged warning and named, with why, to the
model, which would otherwise take an image it never got for no image at all; if
nothing usable is left the turn gets the text, and if anything unexpected goes wrong,
the text alone. An image inlined for a vision model is fitted first (`agent._image_fit`:
at most 2048 px, upright, still, re-encoded when that makes it smaller), once, since
the message it enters is re-sent with every later turn; one Pillow cannot decode is
unusable.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import logging
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from agent._errors import ToolError
from agent._image_fit import UnusableImage, check_image, fit_image, run_decoding
from agent.tools import resolve_in_workspace
from agent.tools._open_unfollowed import is_swapped, open_unfollowed
from agent.tools.file_scope import FileScope

log = logging.getLogger("agent.images")

#: Images a task may carry at most.
MAX_IMAGES = 8
#: Bytes one image may have at most (a local file, or a data URL once decoded).
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
#: The hint appended to a text goal that names images.
VISION_HINT = (
    "[You cannot see these images directly; if a vision tool is available, use it to look at them.]"
)

# The formats chat vision APIs commonly accept, by their leading bytes.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_HEAD_BYTES = 16
_DATA_URL = re.compile(r"data:(image/[A-Za-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)\Z", re.DOTALL)
_HTTP_URL = re.compile(r"https?://\S+\Z", re.IGNORECASE)


class _Skip(Exception):
    """This image is unusable; the message says why (for the log and the model)."""


class _Undecodable(_Skip):
    """Its leading bytes say image but Pillow cannot decode it: no vision tool could read it either."""


def images_problem(images: object) -> str | None:
    """None when ``images`` is None or a list of at most `MAX_IMAGES` non-empty strings,
    else a one-line tool-error message. Entries are not checked for existence here:
    an unusable image is skipped later, it never fails the task."""
    if images is None:
        return None
    if not isinstance(images, list):
        return (
            "images must be an array of local file paths, http(s) URLs or data:image/ URLs, "
            f"got {type(images).__name__}"
        )
    if len(images) > MAX_IMAGES:
        return f"a task may carry at most {MAX_IMAGES} images, got {len(images)}"
    for i, image in enumerate(images):
        if not isinstance(image, str) or not image.strip():
            shown = repr(_clipped(image)) if isinstance(image, str) else type(image).__name__
            return f"images[{i}] must be a non-empty string (a local path or URL), got {shown}"
    return None


def workspace_images_problem(images: Sequence[str], workspace: Path, scope: FileScope | None) -> str | None:
    """For a session without ``read_file`` (a chat platform's, unless the operator turned the ``file``
    toolset on): None when each of ``images`` is an http(s) or data: URL or a file in the session's own
    folder (``scope.own``: what its chat sent), else a one-line tool-error message naming the first other.
    Shown to a vision model, any other workspace image would be a read the operator did not enable.
    Resolves paths (blocking file I/O)."""
    root = Path(workspace).resolve()
    for i, image in enumerate(images):
        image = image.strip()
        if _HTTP_URL.match(image) or image[:5].lower() == "data:" or _in_own_folder(root, image, scope):
            continue
        allowed = "http(s) URLs or data:image/ URLs"
        if scope is not None and scope.own:
            allowed = f"http(s) URLs, data:image/ URLs or the files this chat sent ({scope.own}/)"
        return (f"images[{i}] {_clipped(image)!r} is a workspace path, and this session has no file tools to "
                f"read workspace files, so no subagent may be shown it either: give only {allowed}")
    return None


def _in_own_folder(root: Path, image: str, scope: FileScope | None) -> bool:
    if scope is None or not scope.own:
        return False
    try:
        target = resolve_in_workspace(root, image)
        scope.check(target, root, image)
    except ToolError:
        return False
    # Compared unresolved: an own folder that is (or lies under) a symlink leads elsewhere, none of it its own.
    return target.is_relative_to(root / scope.own)


_ECHO_CHARS = 60
"""A blank entry is named back in the tool error cut to this, as lifecycle's `clipped` cuts what it echoes
(agent/ imports nothing from lifecycle/): whole, 100,000 spaces came back in the tool result, which the
model reads again at every later request."""


def _clipped(text: str) -> str:
    return text if len(text) <= _ECHO_CHARS else text[:_ECHO_CHARS - 1] + "…"


def image_type(data: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, GIF or WebP image by its leading bytes; None for anything else."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _sniff(head: bytes) -> str:
    mime = image_type(head)
    if mime is None:
        # Magic bytes decide, not the extension: a mislabelled file sent as an image
        # would make the model call itself fail, and with it the spawn.
        raise _Skip("is not a PNG, JPEG, GIF or WebP image")
    return mime


def _local(workspace: Path, image: str, scope: FileScope | None) -> tuple[BinaryIO, int]:
    """The local image ``image`` open for reading, and its size; or `_Skip`. Checked as read_file
    checks a path, and opened as it opens one (`open_unfollowed`), what was opened checked on its
    descriptor: a symlink out of the workspace put on the path since is refused, and a FIFO neither
    blocks the worker thread for ever nor is read."""
    try:
        target = resolve_in_workspace(workspace, image)  # the same guards as read_file
        if scope is not None:  # another chat's attachment is not this one's to show a subagent
            scope.check(target, workspace.resolve(), image)
    except ToolError as exc:
        raise _Skip(str(exc)) from None
    try:
        fd = open_unfollowed(target)
    except FileNotFoundError:
        raise _Skip("does not exist or is not a regular file") from None
    except OSError as exc:
        if is_swapped(exc):
            raise _Skip("changed after it was checked: a symlink is now where a folder or the file was") from None
        raise _Skip(f"cannot be read: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # a directory, or a FIFO or device
        os.close(fd)
        raise _Skip("does not exist or is not a regular file")
    return os.fdopen(fd, "rb"), info.st_size


def _image_url(image: str, workspace: Path, max_bytes: int, scope: FileScope | None) -> str:
    """The ``image_url`` for a vision model, or `_Skip`."""
    if _HTTP_URL.match(image):
        return image
    if image[:5].lower() == "data:":
        match = _DATA_URL.match(image)
        if match is None:
            raise _Skip("is not a base64 data:image/ URL")
        try:
            data = base64.b64decode("".join(match[2].split()), validate=True)
        except (binascii.Error, ValueError):
            raise _Skip("has malformed base64 data") from None
        if len(data) > max_bytes:
            raise _Skip(f"is larger than {max_bytes} bytes")
        fitted, mime = _fitted(data, _sniff(data[:_HEAD_BYTES]))
        return image if fitted is data else f"data:{mime};base64,{base64.b64encode(fitted).decode('ascii')}"
    data = _read(workspace, image, max_bytes, scope)
    data, mime = _fitted(data, _sniff(data[:_HEAD_BYTES]))
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _read(workspace: Path, image: str, max_bytes: int, scope: FileScope | None) -> bytes:
    """The bytes of the local image ``image``, at most ``max_bytes`` of them; or `_Skip`."""
    opened, size = _local(workspace, image, scope)
    try:
        with opened as f:
            if size > max_bytes:
                raise _Skip(f"is larger than {max_bytes} bytes")
            data = f.read(max_bytes + 1)  # the file may have grown since fstat
    except OSError as exc:
        raise _Skip(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise _Skip(f"is larger than {max_bytes} bytes")
    return data


def _fitted(data: bytes, mime: str) -> tuple[bytes, str]:
    try:
        return fit_image(data, mime)
    except UnusableImage as why:
        raise _Undecodable(str(why)) from None


def picture_problem(image: str, *, workspace: Path, max_bytes: int = DEFAULT_MAX_BYTES,
                    file_scope: FileScope | None = None) -> str | None:
    """Why the local image ``image`` (a workspace path) is unusable, in the words `first_turn_content` gives a vision
    model's in ``unusable``; None when it is usable. For a model without vision, which is given the path, not the
    image: decoded within the limits a vision model's image is fitted within (`agent._image_fit.check_image`), so a
    file that only starts like an image is refused, but neither scaled nor encoded. Skipped with a warning as there.
    Never raises: what fails unforeseen is logged and the image taken as usable. Blocking and CPU-bound: from async
    code, `picture_problem_async`."""
    try:
        data = _read(Path(workspace), image, max_bytes, file_scope)
        try:
            check_image(data, _sniff(data[:_HEAD_BYTES]))
        except UnusableImage as unusable:
            raise _Undecodable(str(unusable)) from None
    except _Skip as why:
        _skip(image, why, [])
        return str(why)
    except Exception:
        log.exception("checking an image failed; it is taken as usable")
    return None


async def picture_problem_async(image: str, *, workspace: Path, max_bytes: int = DEFAULT_MAX_BYTES,
                                file_scope: FileScope | None = None) -> str | None:
    """`picture_problem` in one of the decode threads (`run_decoding`), as `first_turn_content_async` fits images."""
    return await run_decoding(functools.partial(picture_problem, image, workspace=workspace, max_bytes=max_bytes,
                                                file_scope=file_scope))


def _text_line(image: str, workspace: Path, scope: FileScope | None) -> str:
    """The ``[Image attached at: ...]`` line for a model without vision, or `_Skip`."""
    if _HTTP_URL.match(image):
        return f"[Image attached at: {image}]"
    if image[:5].lower() == "data:":
        # Neither a path nor a URL a tool could open, and pasting it would flood the context.
        raise _Skip("is a data URL, which a model without vision cannot use")
    opened, _ = _local(workspace, image, scope)
    try:
        with opened as f:
            _sniff(f.read(_HEAD_BYTES))
    except OSError as exc:
        raise _Skip(f"cannot be read: {exc.strerror or exc}") from None
    return f"[Image attached at: {image}]"


def _shown(image: str) -> str:
    # Logs and the model's note name the image, but not a multi-megabyte data URL in full.
    return repr(image if len(image) <= 120 else image[:100] + "...")


def _skip(image: str, why: _Skip, skipped: list[tuple[str, _Skip]]) -> None:
    # By kind at WARNING, the name at DEBUG: a file's name is the model's word, often a user's (a photo's), and
    # the log is the operator's. The model's note names it (`_text_form`). A reason names it quoted (a tool
    # error's ``'photo.jpg' is outside the workspace``); bare, a name like "a" or "image" is a word of the reason too.
    said = str(why).replace(repr(image), "<image>")
    log.warning("an image (%s) skipped: %s", _kind(image), said)
    log.debug("the image skipped: %s", _shown(image))
    # Neither with its traceback nor with an error as its context (with that one's traceback): the frames in them
    # lead back to the one whose ``skipped`` holds it, a cycle, which held the image's bytes read (up to
    # ``max_bytes`` each) until the garbage collector ran.
    why.__context__ = None
    skipped.append((image, why.with_traceback(None)))


def _kind(image: str) -> str:
    return "a data URL" if image.startswith("data:") else "a URL" if "://" in image else "a file"


def _text_form(goal: str, images: list[str], workspace: Path, skipped: list[tuple[str, _Skip]],
               scope: FileScope | None) -> str:
    lines = []
    for image in images:
        try:
            lines.append(_text_line(image, workspace, scope))
        except _Skip as why:
            _skip(image, why, skipped)
    if not lines:
        return goal
    return "\n".join([goal, "", *lines, VISION_HINT])


def _vision_form(goal: str, images: list[str], workspace: Path, max_bytes: int,
                 skipped: list[tuple[str, _Skip]], scope: FileScope | None) -> list[dict] | None:
    parts: list[dict] = [{"type": "text", "text": goal}]
    for image in images:
        try:
            url = _image_url(image, workspace, max_bytes, scope)
        except _Skip as why:
            _skip(image, why, skipped)
            continue
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts if len(parts) > 1 else None


def with_text(content: str | list[dict], text: str) -> str | list[dict]:
    """``content`` (a `first_turn_content`) with ``text`` as a paragraph after its own text."""
    if isinstance(content, str):
        return f"{content}\n\n{text}" if content else text
    first = content[0]["text"]
    return [{"type": "text", "text": f"{first}\n\n{text}" if first else text}, *content[1:]]


def first_turn_content(
    goal: str,
    images: Sequence[str],
    *,
    workspace: Path,
    supports_vision: bool,
    max_bytes: int = DEFAULT_MAX_BYTES,
    unusable: list[tuple[str, str]] | None = None,
    file_scope: FileScope | None = None,
) -> str | list[dict]:
    """The child's first user message: ``goal`` alone, or with its images.

    Without images: ``goal`` unchanged. For a vision model: OpenAI chat content
    parts, the goal's text part then one ``image_url`` part per usable image
    (local files and data URLs inlined as data URLs, fitted by `agent._image_fit`;
    http(s) URLs passed through).
    Otherwise, or when no image is usable: the goal text plus an
    ``[Image attached at: ...]`` line per image that exists or is a URL (and, for a
    vision model, is not one Pillow cannot decode), and `VISION_HINT`. Local paths
    go through the workspace guard, and ``file_scope`` (the parent's: a chat's session may not show
    its subagent another chat's attachment). Unusable images are skipped with a warning and
    named with why in a last paragraph, ``[Images that could not be used: ...]``;
    a caller that passes ``unusable`` gets them there as ``(image, why)`` instead,
    to tell the model in its own words. Never raises. Does blocking file I/O: from
    async code use `first_turn_content_async`.
    """
    try:
        if isinstance(images, str):  # a bare string is one image, not a sequence of characters
            images = [images]
        wanted = [i.strip() for i in images or () if isinstance(i, str) and i.strip()]
        if not wanted:
            return goal
        workspace = Path(workspace)
        skipped: list[tuple[str, _Skip]] = []
        content: str | list[dict] | None = None
        if supports_vision:
            content = _vision_form(goal, wanted, workspace, max_bytes, skipped, file_scope)
            if content is None:
                log.warning("no usable image for a vision model (%d refused); the text goes without it", len(skipped))
                # A path a vision tool might open (an image too large to inline), not one that is no image.
                wanted = [image for image, why in skipped if not isinstance(why, _Undecodable)]
                skipped = [(image, why) for image, why in skipped if isinstance(why, _Undecodable)]
        if content is None:
            content = _text_form(goal, wanted, workspace, skipped, file_scope)
        if unusable is not None:
            unusable.extend((image, str(why)) for image, why in skipped)
        elif skipped:
            named = "; ".join(f"{_shown(image)} ({why})" for image, why in skipped)
            content = with_text(content, f"[Images that could not be used: {named}]")
        return content
    except Exception:
        log.exception("attaching images failed; the child gets the plain goal")
        return goal


async def first_turn_content_async(
    goal: str,
    images: Sequence[str],
    *,
    workspace: Path,
    supports_vision: bool,
    max_bytes: int = DEFAULT_MAX_BYTES,
    unusable: list[tuple[str, str]] | None = None,
    file_scope: FileScope | None = None,
) -> str | list[dict]:
    """`first_turn_content` in a worker thread, so its file I/O never blocks the event loop. When it
    has images to fit, in one of the decode threads (`run_decoding`), waiting for one while
    `MAX_DECODES` others decode without taking one of the loop's own, which every
    ``asyncio.to_thread`` shares."""
    call = functools.partial(first_turn_content, goal, images, workspace=workspace,
                             supports_vision=supports_vision, max_bytes=max_bytes, unusable=unusable,
                             file_scope=file_scope)
    if supports_vision and _to_fit(images):
        return await run_decoding(call)
    return await asyncio.to_thread(call)


def _to_fit(images: Sequence[str]) -> bool:
    """Whether any of ``images`` is one a vision model gets fitted (a local file or a data URL)."""
    try:
        wanted = [images] if isinstance(images, str) else list(images or ())
        return any(isinstance(i, str) and i.strip() and not _HTTP_URL.match(i.strip()) for i in wanted)
    except Exception:  # garbage, which first_turn_content turns into the goal alone
        return False
