"""agent._token_estimate: a picture counts what OpenAI counts for its size (85 + 170 a 512×512 tile at high
detail), read from its data URL's header, not a flat 512: a few large pictures reach the compaction trigger."""

from __future__ import annotations

import base64
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from agent import AgentSession, Compactor
from agent._token_estimate import IMAGE_TOKENS, data_url_size, estimate_tokens, part_tokens, picture_tokens
from agent.images import first_turn_content
from agent.models.scripted import ScriptedModel
from tests.pictures import photo, picture


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def part(url: str, **more: str) -> dict:
    return {"type": "image_url", "image_url": {"url": url, **more}}


@pytest.mark.parametrize(("size", "tokens"), [
    ((1, 1), 255), ((512, 512), 255), ((513, 512), 425), ((1024, 1024), 765), ((4000, 3000), 765),
    ((1920, 1080), 1105), ((2048, 4096), 1105), ((768, 2048), 1445), ((100_000, 1), 765),
])
def test_a_picture_counts_what_openai_counts_for_its_size_at_high_detail(size: tuple[int, int], tokens: int) -> None:
    # OpenAI's own examples: 1024×1024 is 765; 2048×4096 is 1,105.
    assert picture_tokens(*size) == tokens
    assert picture_tokens(*size, detail="low") == 85


def test_a_fitted_screenshot_counts_by_its_size_not_flat() -> None:
    # A 1920×1080 screenshot counted 512, under half of the 1,105 it takes.
    screenshot = part(data_url(picture("PNG", (1920, 1080))))
    assert estimate_tokens([{"role": "user", "content": [{"type": "text", "text": "abcd"}, screenshot]}]) \
        == 1 + 4 + 1105
    assert part_tokens(part(data_url(picture("PNG", (64, 64))))) == 255
    assert part_tokens(part(data_url(picture("PNG", (1920, 1080))), detail="low")) == 85


@pytest.mark.parametrize("kind", ["PNG", "JPEG", "GIF", "WEBP"])
def test_the_size_is_read_from_each_format_a_model_is_sent(kind: str) -> None:
    assert data_url_size(data_url(picture(kind, (1234, 567)), f"image/{kind.lower()}")) == (1234, 567)


def test_a_jpeg_is_read_past_its_exif_and_colour_profile_and_an_animated_webp_by_its_canvas() -> None:
    exif = Image.Exif()
    exif[0x010E] = "a long description " * 1000  # an APP1 segment of 19 KB before the frame
    out = io.BytesIO()
    Image.new("RGB", (300, 200)).save(out, "JPEG", exif=exif, icc_profile=b"\0" * 3000)
    assert data_url_size(data_url(out.getvalue(), "image/jpeg")) == (300, 200)
    frames = [Image.new("RGBA", (321, 123), (n, 0, 0, 128)) for n in range(3)]
    out = io.BytesIO()
    frames[0].save(out, "WEBP", save_all=True, append_images=frames[1:])
    assert data_url_size(data_url(out.getvalue(), "image/webp")) == (321, 123)


@pytest.mark.parametrize("url", ["https://example.com/cat.png", "data:,x", "data:image/png;base64," + "A" * 1000,
                                 "data:image/png;base64,%%%%", "data:image/jpeg;base64,/9j/"])
def test_a_picture_whose_size_is_not_in_its_part_counts_the_flat_guess(url: str) -> None:
    assert part_tokens(part(url)) == IMAGE_TOKENS
    assert part_tokens({"type": "input_audio", "input_audio": {"data": "x"}}) == IMAGE_TOKENS


def test_a_phone_photo_sent_in_a_chat_counts_as_its_fitted_size(tmp_path) -> None:
    (tmp_path / "photo.jpg").write_bytes(photo())  # 4000×3000, fitted to 2048×1536
    content = first_turn_content("what is it?", ["photo.jpg"], workspace=tmp_path, supports_vision=True)
    assert estimate_tokens([{"role": "user", "content": content}]) == 3 + 4 + 765


async def test_a_few_large_pictures_reach_the_compaction_trigger() -> None:
    # A 4,096-token window compacts at 2,048: three screenshots (3,315 by their size) were counted 1,536 and the
    # conversation went on unsummarised past the trigger, towards a request the server refuses.
    screenshot = part(data_url(picture("PNG", (1920, 1080))))
    model = ScriptedModel({"parent": lambda request: {"text": "done"}}, context_window=4_096)
    session = AgentSession(model=model, system_prompt="be brief", compactor=Compactor())
    for n in range(3):
        session.messages.append({"role": "user", "content": [{"type": "text", "text": f"shot {n}"}, screenshot]})
        session.messages.append({"role": "assistant", "content": f"seen {n}"})
    assert await session.compactor(session) is True


@settings(max_examples=300, deadline=None)
@given(width=st.integers(1, 70_000), height=st.integers(1, 70_000), detail=st.sampled_from(["auto", "high", "low"]))
def test_every_size_counts_between_one_tile_and_eight(width: int, height: int, detail: str) -> None:
    tokens = picture_tokens(width, height, detail=detail)
    assert tokens == 85 if detail == "low" else 255 <= tokens <= 1445 and (tokens - 85) % 170 == 0
    assert tokens == picture_tokens(height, width, detail=detail)


@settings(max_examples=300, deadline=None)
@given(url=st.text(max_size=80), tail=st.binary(max_size=40))
def test_any_url_is_counted_without_an_error(url: str, tail: bytes) -> None:
    for shown in (url, "data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8" + tail).decode() + url):
        assert part_tokens(part(shown)) >= 85
