"""The fake Anthropic API's image and document handling, driven through the real SDK: valid media are
counted by their pixels and pages; invalid ones get the 400s the real API gives."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest

from tests.fakes.anthropic import FakeAnthropic
from tests.support.media_files import image_bytes, pdf_bytes

MODEL = "claude-sonnet-4-6"


@pytest.fixture
async def client() -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with FakeAnthropic() as fake:
        sdk = anthropic.AsyncAnthropic(
            api_key=fake.api_key, base_url=fake.base_url, max_retries=0, timeout=20
        )
        yield sdk
        await sdk.close()


def image(data: bytes, media_type: str = "image/jpeg") -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": encoded}}


def pdf(data: bytes) -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    return {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": encoded},
    }


async def send(client: anthropic.AsyncAnthropic, *blocks: dict[str, Any]) -> anthropic.types.Message:
    content: list[Any] = [*blocks, {"type": "text", "text": "what is this?"}]
    result: anthropic.types.Message = await client.messages.create(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": content}]
    )
    return result


async def refused(client: anthropic.AsyncAnthropic, *blocks: dict[str, Any]) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await send(client, *blocks)
    assert caught.value.status_code == 400
    return str(caught.value.message)


async def test_images_are_counted_by_their_pixels(client: anthropic.AsyncAnthropic) -> None:
    text_only = (await send(client)).usage.input_tokens
    small = (await send(client, image(image_bytes(750, 100)))).usage.input_tokens
    large = (await send(client, image(image_bytes(3136, 2352)))).usage.input_tokens  # fitted to 1568x1176
    assert small - text_only == 100 + 3  # 750 x 100 / 750, plus the block overhead
    assert large - text_only == 2459 + 3


async def test_pdf_pages_cost_their_text_and_their_image(client: anthropic.AsyncAnthropic) -> None:
    text_only = (await send(client)).usage.input_tokens
    two_pages = (await send(client, pdf(pdf_bytes(["alpha", "beta"])))).usage.input_tokens
    assert two_pages - text_only == 2 * 2534 + 2 + 2 + 3  # page images, page texts, block overhead


async def test_images_the_real_api_refuses(client: anthropic.AsyncAnthropic) -> None:
    png = image_bytes(10, 10, "PNG")
    assert "media_type: Input should be 'image/jpeg'" in await refused(client, image(png, "image/bmp"))
    assert "appears to be a image/png image" in await refused(client, image(png, "image/jpeg"))
    assert "Could not process image" in await refused(client, image(b"\xff\xd8\xff not really"))
    assert "invalid base64" in await refused(
        client, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "@@@"}}
    )
    wide = image_bytes(8001, 10, "PNG")
    assert "exceed max allowed size: 8000 pixels" in await refused(client, image(wide, "image/png"))
    noisy = image_bytes(1600, 1600, "PNG", noise=True)
    message = await refused(client, image(noisy, "image/png"))
    assert "image exceeds 5 MB maximum" in message


async def test_many_images_lower_the_size_limit(client: anthropic.AsyncAnthropic) -> None:
    blocks = [image(image_bytes(2100, 100, seed=i)) for i in range(21)]
    assert "for many-image requests: 2000 pixels" in await refused(client, *blocks)


async def test_pdfs_the_real_api_refuses(client: anthropic.AsyncAnthropic) -> None:
    assert "The PDF specified was not valid." in await refused(client, pdf(b"%PDF-1.4 nonsense"))
    pages = pdf_bytes([f"p{i}" for i in range(101)])
    assert "A maximum of 100 PDF pages may be provided." in await refused(client, pdf(pages))


async def test_requests_over_32_mb_are_too_large(client: anthropic.AsyncAnthropic) -> None:
    blob = {"type": "text", "text": "x" * (33 * 1024 * 1024)}
    with pytest.raises(anthropic.APIStatusError) as caught:
        await send(client, blob)
    assert caught.value.status_code == 413
