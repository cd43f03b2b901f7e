"""What a file a user sent holds, by its bytes rather than its name or the type stated for it (`content_type`), and
how that type is put to the model (`type_said`): a platform's label or a sender's MIME type is a claim, and a PDF
typed image/png, or HTML typed image/png, was passed on as stated. Apart from `gateway.attachments` because it is one
concept: telling kinds of bytes apart."""

from __future__ import annotations

import codecs
import re

from agent.images import image_type

_HEIF_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"hevm", b"hevs", b"mif1", b"msf1"})
"""The major brands of a HEIF file's ``ftyp`` box: Apple's HEIC photos and their image sequences."""
_AVIF_BRANDS = frozenset({b"avif", b"avis"})


def heif(data: bytes) -> str | None:
    """What picture ``data`` is ("a HEIC", "an AVIF") if it is one of these, by its leading ``ftyp`` box,
    whatever its name or label. An AVIF is HEIF too: some encoders give it HEIF's own major brand (``mif1``),
    and AVIF's only among the compatible brands that follow the minor version."""
    if data[4:8] != b"ftyp" or data[8:12] not in _HEIF_BRANDS | _AVIF_BRANDS:
        return None
    box = data[16:min(int.from_bytes(data[:4], "big"), 256)]
    brands = {data[8:12], *(box[i:i + 4] for i in range(0, len(box) - 3, 4))}
    return "an AVIF" if brands & _AVIF_BRANDS else "a HEIC"


PICTURES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""What a vision model is shown (`agent.images.image_type`): an SVG never, as it is a script's page too."""
_SNIFFED = 8192
"""Bytes of a file read to tell text from binary and HTML or SVG from plain text."""
_SAID = {
    "image/png": "a PNG image", "image/jpeg": "a JPEG image", "image/gif": "a GIF image", "image/webp": "a WebP image",
    "heif": "a HEIC or AVIF picture", "pdf": "a PDF document", "zip": "a ZIP archive", "svg": "SVG",
    "html": "HTML", "text": "text",
}  # fmt: skip
"""What each kind `content_type` tells apart is called to the model (what a file holds, or what its type claims)."""
_ZIP_SAID = "a ZIP archive (or a format built on one: DOCX, XLSX, ODT, EPUB, JAR…)"
_TEXT_CONTROLS = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
"""Bytes text holds none of: control characters but tab, line ends, form feed, and escape (coloured logs)."""
_BLANK = re.compile("[\ufeff \t\r\n]*")
_HTML_START = re.compile(r"<(?:!doctype\s+html|html|head|body|script|iframe)[\s>/]")
_STATED_ALIASES = {
    "image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png",
    "image/heic": "heif", "image/heif": "heif", "image/heic-sequence": "heif", "image/heif-sequence": "heif",
    "image/avif": "heif", "application/pdf": "pdf", "application/x-pdf": "pdf", "application/zip": "zip",
    "application/x-zip-compressed": "zip", "application/x-zip": "zip", "application/java-archive": "zip",
    "application/vnd.android.package-archive": "zip", "image/svg+xml": "svg", "text/html": "html",
    "application/xhtml+xml": "html", "application/json": "text", "application/xml": "text",
    "application/javascript": "text", "application/x-sh": "text", "application/x-yaml": "text",
    "application/yaml": "text", "application/sql": "text", "application/x-python": "text",
}  # fmt: skip
_ZIP_FAMILIES = ("application/vnd.openxmlformats-officedocument.", "application/vnd.oasis.opendocument.")


def content_type(data: bytes, *, pictures: bool = True) -> tuple[str, str] | None:
    """What ``data`` holds by its bytes, whatever its name or type say: ``(kind, said)``, the kind one of `_SAID`'s
    (a picture's by its MIME type) and ``said`` its words for the model; None for an empty file or bytes of
    no kind told apart here (an MP4, an Office 97 file, an executable). By the magic numbers of the pictures a
    vision model takes, HEIC and AVIF, PDF and ZIP (which Office's and OpenDocument's files are), then text as
    UTF-8 (or UTF-16, with its byte-order mark or mostly ASCII without one: `_utf`), HTML and SVG among it.
    ``pictures=False``: what it holds but a picture, for a file whose first bytes only name one, which the
    decoder refused (a note that begins "GIF89a is…" is text; a JPEG cut short is None)."""
    if pictures and (picture := image_type(data)):
        return picture, _SAID[picture]
    if which := heif(data):
        return "heif", f"{which} picture"
    if data.startswith(b"%PDF-"):
        return "pdf", _SAID["pdf"]
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"):
        return "zip", _ZIP_SAID
    read = _text(data[:_SNIFFED], whole=len(data) <= _SNIFFED)
    if read is None:
        return None
    text, utf = read
    start = _markup_start(text)
    if _HTML_START.match(start):
        return "html", _SAID["html"]
    if start.startswith("<") and "<svg" in start:
        return "svg", "SVG (XML text that can carry scripts; not shown as a picture)"
    return "text", _SAID["text"] if utf else "text, not in UTF-8"


def _markup_start(text: str) -> str:
    """``text`` lower-cased (markup is not case sensitive) from its first tag: past a BOM, blank lines and
    comments. Not a regular expression over the comments: one backtracked exponentially on a file of many that
    was no markup ("<!---->" 25 times, then a word, took 12 s)."""
    start, at = text.lower(), 0
    while start.startswith("<!--", at := _BLANK.match(start, at).end()):
        end = start.find("-->", at + 4)
        if end < 0:
            break
        at = end + 3
    return start[at:]


def _text(head: bytes, *, whole: bool) -> tuple[str, bool] | None:
    """``head``, a file's first bytes (a character perhaps cut at its end, unless it is the ``whole`` file), as
    text, and whether it is UTF-8 (or UTF-16: `_utf`), if it is text: one in another encoding
    (a CSV saved by Excel in Windows-1252, a Shift JIS page) is read as Latin-1, as long as it holds no control
    character (`_TEXT_CONTROLS`), which binary data has in its first few hundred bytes."""
    utf = _utf(head, whole=whole)
    text = head.decode("latin-1") if utf is None else utf
    return (text, utf is not None) if text and not _TEXT_CONTROLS.search(text) else None


def _utf(head: bytes, *, whole: bool) -> str | None:
    """``head`` decoded as UTF-8, or UTF-16 after its byte-order mark, or without one when a zero is every other
    byte at least as often as not, and never between (ASCII in UTF-16, as Excel and PowerShell export it: read as
    UTF-8, its zeros made it binary); None if it is neither."""
    codec, body = "utf-8", head
    for bom, name in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if head.startswith(bom):
            codec, body = name, head[len(bom):]
    if codec == "utf-8" and b"\x00" in head:
        for name, high, low in (("utf-16-le", head[1::2], head[::2]), ("utf-16-be", head[::2], head[1::2])):
            if 0 not in low and 2 * high.count(0) >= len(high):
                codec = name
    try:
        return codecs.getincrementaldecoder(codec)().decode(body, final=whole)
    except UnicodeDecodeError:
        return None


def _stated_kind(stated: str | None) -> str | None:
    """The kind (`_SAID`'s) a stated MIME type claims; ``binary`` for another picture, a sound, a video, a font;
    None where it claims nothing checkable (none, ``application/octet-stream``, a type not known here)."""
    mime = (stated or "").split(";")[0].strip().lower()
    if mime in PICTURES:
        return mime
    if kind := _STATED_ALIASES.get(mime):
        return kind
    if mime.startswith(_ZIP_FAMILIES) or mime.endswith("+zip"):
        return "zip"
    if mime.startswith("text/") or mime.endswith(("+json", "+xml")):
        return "text"
    return "binary" if mime.partition("/")[0] in ("image", "audio", "video", "font") else None


def type_said(stated: str | None, held: tuple[str, str] | None) -> str:
    """A file's type for the model: ``stated`` (the platform's or the sender's, `plain`) when the bytes (``held``, a
    `content_type`) bear it out or nothing can be told, else both, plainly: "stated image/png, but the content
    is text", "unknown type, content is a PDF document"."""
    claimed, stated = _stated_kind(stated), plain(stated) if stated else stated
    if held is None:
        if claimed in (None, "binary"):
            return stated or "unknown type"
        return f"stated {stated}, but the content is " + ("binary, not text" if claimed == "text"
                                                          else f"not {_SAID[claimed]}")
    kind, said = held
    if claimed == kind or {claimed, kind} in ({"text", "html"}, {"text", "svg"}):  # markup is text
        return stated or "unknown type"
    if claimed is None:
        return f"{stated or 'unknown type'}, content is {said}"
    return f"stated {stated}, but the content is {said}"


def relabelled(stated: str | None) -> bool:
    """Whether a picture shown to the model was ``stated`` to be something other than a picture: one typed
    image/jpeg that is a PNG is shown as what it is, and has no need of a word."""
    return _stated_kind(stated) not in (None, *PICTURES)


PLAIN_MAX = 200
"""Characters of a name or type `plain` keeps: a name is the user's, not a page of text for the model to read."""
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_DIRECTION_MARKS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BRACKETS = str.maketrans("[]", "\uff3b\uff3d")


def plain(text: str) -> str:
    """``text``, a name or MIME type the sender chose, as the model's bracketed notes show it: one line (each run of
    control characters one space), without direction marks, its square brackets full-width look-alikes, at most
    `PLAIN_MAX` characters. Raw, "application/pdf\\n\\n]SYSTEM: …" closed the note and wrote a paragraph that read
    as the gateway's; a right-to-left override turned the rest of the note around."""
    text = _DIRECTION_MARKS.sub("", _LINE_BREAKING.sub(" ", text)).strip().translate(_BRACKETS)
    return text if len(text) <= PLAIN_MAX else text[:PLAIN_MAX - 1] + "…"
