"""gateway.attachments: what a file holds, by its bytes, decides what the model is told of it and whether it is
shown as a picture; the type the platform or the sender stated is said beside it when the bytes disagree."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.images import image_type
from agent.testing import FakeClock
from gateway.attachments import prepare
from gateway.file_contents import content_type, type_said
from platforms.base import Attachment
from tests.pictures import GIF, JPEG, PNG, WEBP

HTML = b"<!DOCTYPE html>\n<html><body><script>fetch('/steal')</script></body></html>"
SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


class Files:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.max_attachment_bytes = files, 10_000_000

    async def download(self, attachment: Attachment) -> bytes:
        return self.files[attachment.ref]


async def run(data: bytes, attachment: Attachment, ws: Path, *, vision: bool = True):
    return await prepare(Files({attachment.ref: data}), "slack", (attachment,), "look", workspace=ws, folder="c-1",
                         supports_vision=vision, clock=FakeClock())


def pictures(content: object) -> list[str]:
    return [p["image_url"]["url"] for p in content if p["type"] == "image_url"] if isinstance(content, list) else []


def text_of(content: object) -> str:
    return content if isinstance(content, str) else content[0]["text"]


async def test_a_png_typed_a_pdf_is_shown_as_the_picture_it_is_and_the_model_told_its_stated_type(
        tmp_path: Path) -> None:
    # Was listed as "report.pdf (application/pdf, …)": a vision model never saw the picture, and was told a PDF.
    prepared = await run(PNG, Attachment("document", "report.pdf", "application/pdf", len(PNG), "f"), tmp_path)
    (url,) = pictures(prepared.content)
    assert base64.b64decode(url.split(",", 1)[1]) == PNG
    assert ("[Pictures the user sent under another type, taken as the pictures they are: report.pdf (stated"
            " application/pdf, but the content is a PNG image)]") in text_of(prepared.content)
    assert (tmp_path / "attachments/c-1/report.pdf").read_bytes() == PNG


async def test_a_picture_typed_a_pdf_reaches_a_model_without_vision_as_its_path(tmp_path: Path) -> None:
    prepared = await run(JPEG, Attachment("document", "scan.pdf", "application/pdf", None, "f"), tmp_path,
                         vision=False)
    assert "[Image attached at: attachments/c-1/scan.pdf]" in prepared.content
    assert "scan.pdf (stated application/pdf, but the content is a JPEG image)" in prepared.content


@pytest.mark.parametrize(("data", "said"), [
    (HTML, "HTML"), (SVG, "SVG (XML text that can carry scripts; not shown as a picture)"), (b"just words\n", "text"),
    (b"%PDF-1.7\n", "a PDF document"),
])
@pytest.mark.parametrize("vision", [True, False])
async def test_what_is_typed_image_png_but_is_not_a_picture_is_listed_with_what_it_holds(
        tmp_path: Path, data: bytes, said: str, vision: bool) -> None:
    # Was listed as "(image/png, …)": a page with a script, or an SVG, passed on as the picture it claimed to be.
    prepared = await run(data, Attachment("image", "cat.png", "image/png", len(data), "f"), tmp_path, vision=vision)
    assert isinstance(prepared.content, str) and pictures(prepared.content) == []
    assert f"- attachments/c-1/cat.png (stated image/png, but the content is {said}, {len(data)} bytes)" \
        in prepared.content
    assert (tmp_path / "attachments/c-1/cat.png").read_bytes() == data


async def test_an_svg_typed_as_one_is_a_file_never_a_picture(tmp_path: Path) -> None:
    prepared = await run(SVG, Attachment("document", "logo.svg", "image/svg+xml", None, "f"), tmp_path)
    assert prepared.content == ("look\n\n[The user sent these files, saved in the workspace; read them with your file"
                                " tools:\n- attachments/c-1/logo.svg (image/svg+xml, unknown size)]")


@pytest.mark.parametrize(("data", "stated", "said"), [
    (b"hello", "text/plain", "text/plain"),
    (b"hello", None, "unknown type, content is text"),
    (b"\x00\x01binary", None, "unknown type"),
    (b"\x00\x01binary", "application/octet-stream", "application/octet-stream"),
    (b"\x00\x01binary", "audio/ogg", "audio/ogg"),  # nothing told apart here: not contradicted
    (b"\x00\x01binary", "application/pdf", "stated application/pdf, but the content is not a PDF document"),
    (b"\x00\x01binary", "text/csv", "stated text/csv, but the content is binary, not text"),
    (b"x" * 200, "application/pdf", "stated application/pdf, but the content is text"),
    (b"PK\x03\x04rest", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
     "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (b"PK\x03\x04rest", "image/png",
     "stated image/png, but the content is a ZIP archive (or a format built on one: DOCX, XLSX, ODT, EPUB, JAR…)"),
    ("prix;café\n".encode("cp1252"), "text/csv", "text/csv"),  # Excel's CSV: text, though not UTF-8
    ("prix;café\n".encode("cp1252"), None, "unknown type, content is text, not in UTF-8"),
    ("名前\n".encode("utf-16"), "text/plain", "text/plain"),
    (HTML, "text/html", "text/html"), (HTML, "text/plain", "text/plain"),
    (PNG, "image/png", "image/png"), (GIF, "image/gif", "image/gif"), (WEBP, "image/webp", "image/webp"),
    (b"", None, "unknown type"),
])
def test_the_type_said_is_the_stated_one_unless_the_bytes_say_otherwise(data: bytes, stated: str | None,
                                                                         said: str) -> None:
    assert type_said(stated, content_type(data)) == said


_STATED = st.sampled_from([None, "image/png", "image/jpeg", "image/svg+xml", "application/pdf", "text/plain",
                           "application/octet-stream", "application/zip", "audio/ogg", "image/png; charset=binary"])


@settings(max_examples=300, deadline=None)
@given(text=st.text(min_size=1), stated=_STATED)
def test_text_is_never_taken_for_a_picture_and_its_stated_type_is_kept_in_what_is_said(text: str,
                                                                                       stated: str | None) -> None:
    held = content_type(text.encode("utf-8", "surrogatepass"))
    assert held is None or held[0] in ("text", "html", "svg")
    said = type_said(stated, held)
    assert stated is None or stated in said


_HEADS = st.sampled_from([b"", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF89a", b"RIFF\x00\x00\x00\x00WEBP", b"%PDF-",
                         b"PK\x03\x04", b"<svg", b"\x00\x00\x00\x18ftypheic"])


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=64), head=_HEADS, stated=_STATED)
def test_any_bytes_are_told_of_without_an_error_and_are_a_picture_only_as_the_vision_path_takes_one(
        data: bytes, head: bytes, stated: str | None) -> None:
    held = content_type(head + data)
    assert stated is None or stated in type_said(stated, held)
    assert (held is not None and held[0].startswith("image/")) == (image_type(head + data) is not None)


def test_a_file_of_many_comments_is_told_apart_at_once() -> None:
    # A regular expression over leading comments backtracked exponentially: 25 of them and a word took 12 s.
    assert content_type(b"<!---->" * 1100 + b"plain words") == ("text", "text")
    assert content_type(b"<!-- a -->\n<!--b-->  <HTML lang=en>") == ("html", "HTML")
