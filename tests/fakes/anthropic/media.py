"""Image and document blocks in the fake Anthropic API: validated as the real API does, and counted.

Validation (400 invalid_request_error, with the real API's wording where it is known):
- image: `source.type` base64 with `media_type` one of jpeg/png/gif/webp; the base64 text at most 5 MB
  (5,242,880 bytes, measured on the base64 string); the bytes must decode as an image of that type;
  no side above 8000 px (2000 px when the request carries more than 20 images); at most 100 images.
- document: base64 `application/pdf` that parses, with at most 100 pages (600 on 1M-context models);
  `text` and `content` sources are accepted as plain text.
- the whole request body at most 32 MB (413 request_too_large).

Tokens: an image costs ceil(w x h / 750) after fitting its long edge to 1568 px; a PDF page costs its
text plus an image of the page (long edge at 1568 px), as `agent.media` documents.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from PIL import Image, UnidentifiedImageError
from pypdf import PdfReader
from pypdf.errors import PyPdfError

IMAGE_TYPES = {"image/jpeg": "JPEG", "image/png": "PNG", "image/gif": "GIF", "image/webp": "WEBP"}
IMAGE_BASE64_MAX = 5 * 1024 * 1024
MAX_SIDE, MAX_SIDE_MANY, MANY_IMAGES, MAX_IMAGES = 8000, 2000, 20, 100
REQUEST_MAX_BYTES = 32 * 1024 * 1024
NATIVE_LONG_EDGE = 1568
PIXELS_PER_TOKEN = 750
BYTES_PER_TOKEN = 3.5


class MediaError(ValueError):
    def __init__(self, message: str, *, status: int = 400, error_type: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.message, self.status, self.error_type = message, status, error_type


def _fit(width: int, height: int) -> tuple[int, int]:
    longest = max(width, height)
    if longest <= NATIVE_LONG_EDGE:
        return width, height
    scale = NATIVE_LONG_EDGE / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


@lru_cache(maxsize=512)
def _image_info(data: str) -> tuple[str, int, int]:
    """(format, width, height) of base64 image data; raises MediaError when it cannot be decoded."""
    raw = _b64(data, "image.source.base64")
    try:
        with Image.open(io.BytesIO(raw)) as image:
            image.load()
            return image.format or "", image.width, image.height
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise MediaError("Could not process image") from None


@lru_cache(maxsize=64)
def _pdf_info(data: str) -> tuple[tuple[str, float, float], ...]:
    """(text, width pt, height pt) per page; raises MediaError when the PDF does not parse."""
    raw = _b64(data, "document.source.base64")
    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted:
            raise MediaError("The PDF specified is password protected.")
        return tuple(
            (page.extract_text() or "", float(page.mediabox.width), float(page.mediabox.height))
            for page in reader.pages
        )
    except (PyPdfError, ValueError, KeyError, TypeError, OSError):
        raise MediaError("The PDF specified was not valid.") from None


def _b64(data: str, where: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise MediaError(f"{where}: invalid base64 data") from None


def image_tokens(block: Mapping[str, Any]) -> int:
    source = block.get("source") or {}
    _, width, height = _image_info(str(source.get("data", "")))
    w, h = _fit(width, height)
    return math.ceil(w * h / PIXELS_PER_TOKEN)


def document_tokens(block: Mapping[str, Any]) -> int | None:
    """Tokens of a PDF document block (None for text/content documents, counted as text)."""
    source = block.get("source") or {}
    if source.get("type") != "base64":
        return None
    total = 0
    for text, width, height in _pdf_info(str(source.get("data", ""))):
        scale = NATIVE_LONG_EDGE / max(width, height, 1.0)
        page_image = math.ceil(round(width * scale) * round(height * scale) / PIXELS_PER_TOKEN)
        total += math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN) + page_image
    return total


def _media_blocks(body: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if not isinstance(block, Mapping):
                continue
            where = f"messages.{i}.content.{j}"
            if block.get("type") in ("image", "document"):
                yield where, block
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                for k, inner in enumerate(block["content"]):
                    if isinstance(inner, Mapping) and inner.get("type") in ("image", "document"):
                        yield f"{where}.tool_result.content.{k}", inner


def validate_media(body: Mapping[str, Any], *, context_window: int) -> None:
    """Raise MediaError for the first image or document block the real API would refuse."""
    blocks = list(_media_blocks(body))
    images = [(w, b) for w, b in blocks if b.get("type") == "image"]
    if len(images) > MAX_IMAGES:
        raise MediaError(f"Too many images in request: {len(images)} > {MAX_IMAGES}.")
    max_side = MAX_SIDE_MANY if len(images) > MANY_IMAGES else MAX_SIDE
    for where, block in blocks:
        if block.get("type") == "image":
            _check_image(where, block, max_side)
        else:
            _check_document(where, block, max_pages=600 if context_window >= 1_000_000 else 100)


def _check_image(where: str, block: Mapping[str, Any], max_side: int) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping) or source.get("type") not in ("base64", "url", "file"):
        raise MediaError(f"{where}.image.source: Input tag does not match any of the expected tags")
    if source.get("type") != "base64":
        return
    media_type = source.get("media_type")
    if media_type not in IMAGE_TYPES:
        raise MediaError(
            f"{where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', "
            "'image/gif' or 'image/webp'"
        )
    data = source.get("data")
    if not isinstance(data, str) or not data:
        raise MediaError(f"{where}.image.source.base64.data: Field required")
    if len(data) > IMAGE_BASE64_MAX:
        raise MediaError(
            f"{where}.image.source.base64: image exceeds 5 MB maximum: "
            f"{len(data)} bytes > {IMAGE_BASE64_MAX} bytes"
        )
    try:
        fmt, width, height = _image_info(data)
    except MediaError as exc:
        raise MediaError(f"{where}.image.source.base64.data: {exc.message}") from None
    if fmt != IMAGE_TYPES[media_type]:
        actual = next((t for t, f in IMAGE_TYPES.items() if f == fmt), f"image/{fmt.lower()}")
        raise MediaError(
            f"{where}.image.source.base64.data: The image was specified using the {media_type} media type, "
            f"but the image appears to be a {actual} image"
        )
    if max(width, height) > max_side:
        many = " for many-image requests" if max_side == MAX_SIDE_MANY else ""
        raise MediaError(
            f"{where}.image.source.base64.data: At least one of the image dimensions exceed max allowed "
            f"size{many}: {max_side} pixels"
        )


def _check_document(where: str, block: Mapping[str, Any], *, max_pages: int) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping) or source.get("type") not in (
        "base64",
        "text",
        "content",
        "url",
        "file",
    ):
        raise MediaError(f"{where}.document.source: Input tag does not match any of the expected tags")
    if source.get("type") != "base64":
        return
    if source.get("media_type") != "application/pdf":
        raise MediaError(f"{where}.document.source.base64.media_type: Input should be 'application/pdf'")
    try:
        pages = _pdf_info(str(source.get("data") or ""))
    except MediaError as exc:
        raise MediaError(f"{where}.document.source.base64.data: {exc.message}") from None
    if len(pages) > max_pages:
        raise MediaError(
            f"{where}.document.source.base64.data: A maximum of {max_pages} PDF pages may be provided."
        )


def check_request_size(raw_length: int) -> None:
    if raw_length > REQUEST_MAX_BYTES:
        raise MediaError(
            "Request exceeds the maximum allowed number of bytes.", status=413, error_type="request_too_large"
        )
