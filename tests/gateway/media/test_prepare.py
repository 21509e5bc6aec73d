"""Preparation of downloaded bytes: images decoded and downscaled, PDFs counted, text decoded, bad
input refused."""

from __future__ import annotations

import io

from PIL import Image

from agent.media import image_tokens
from gateway.media.kinds import Route, route_for
from gateway.media.prepare import (
    IMAGE_RAW_MAX,
    MediaLimits,
    PreparedImage,
    PreparedPdf,
    PreparedText,
    Refused,
    decode_text,
    prepare,
)
from tests.support.media_files import corrupt_jpeg, image_bytes, pdf_bytes

LIMITS = MediaLimits()


def _open(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


def test_small_jpeg_is_kept_byte_for_byte() -> None:
    data = image_bytes(800, 600)
    result = prepare(data, mime_type="image/jpeg", filename=None, limits=LIMITS)
    assert isinstance(result, PreparedImage)
    assert result.data == data
    assert (result.media_type, result.width, result.height) == ("image/jpeg", 800, 600)
    assert result.tokens == 640  # 800 x 600 / 750
    assert not result.resized


def test_oversized_photo_is_downscaled_to_the_native_long_edge() -> None:
    data = image_bytes(4000, 3000)
    result = prepare(data, mime_type="image/jpeg", filename="big.jpg", limits=LIMITS)
    assert isinstance(result, PreparedImage)
    assert (result.width, result.height) == (1568, 1176)
    assert result.source_size == (4000, 3000)
    assert _open(result.data).size == (1568, 1176)
    assert result.tokens == image_tokens(1568, 1176) == 2459
    assert len(result.data) < len(data)


def test_portrait_and_custom_long_edge() -> None:
    result = prepare(
        image_bytes(1000, 3000, "PNG"),
        mime_type=None,
        filename="tall.png",
        limits=MediaLimits(image_long_edge=800),
    )
    assert isinstance(result, PreparedImage)
    assert (result.width, result.height) == (267, 800)
    assert result.media_type == "image/png"


def test_formats_the_api_does_not_take_are_reencoded() -> None:
    for fmt in ("BMP", "TIFF"):
        result = prepare(
            image_bytes(300, 200, fmt), mime_type=None, filename=f"x.{fmt.lower()}", limits=LIMITS
        )
        assert isinstance(result, PreparedImage), fmt
        assert result.media_type in ("image/png", "image/jpeg")
        assert _open(result.data).format in ("PNG", "JPEG")
        assert (result.width, result.height) == (300, 200)


def test_webp_and_gif_are_taken_as_they_are() -> None:
    for fmt, media_type in (("WEBP", "image/webp"), ("GIF", "image/gif"), ("PNG", "image/png")):
        result = prepare(image_bytes(256, 256, fmt), mime_type=None, filename=None, limits=LIMITS)
        assert isinstance(result, PreparedImage)
        assert result.media_type == media_type


def test_exif_rotated_photo_is_turned_upright() -> None:
    image = Image.new("RGB", (400, 200), (10, 20, 30))
    exif = image.getexif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif)
    result = prepare(out.getvalue(), mime_type="image/jpeg", filename=None, limits=LIMITS)
    assert isinstance(result, PreparedImage)
    assert (result.width, result.height) == (200, 400)


def test_image_above_the_api_byte_cap_is_recompressed_under_it() -> None:
    data = image_bytes(1500, 1500, "PNG", noise=True)
    assert len(data) > IMAGE_RAW_MAX
    result = prepare(data, mime_type="image/png", filename=None, limits=LIMITS)
    assert isinstance(result, PreparedImage)
    assert len(result.data) <= IMAGE_RAW_MAX
    assert len(result.data) * 4 / 3 <= 5 * 1024 * 1024


def test_corrupt_image_is_refused_with_a_clear_reason() -> None:
    result = prepare(corrupt_jpeg(), mime_type="image/jpeg", filename="broken.jpg", limits=LIMITS)
    assert result == Refused("the file is damaged or not an image")
    truncated = image_bytes(800, 600)[:500]
    assert isinstance(prepare(truncated, mime_type="image/jpeg", filename=None, limits=LIMITS), Refused)


def test_pdf_within_limits_is_a_document_counted_by_page() -> None:
    data = pdf_bytes(["Invoice 42: total 100 EUR", "Page two terms"])
    result = prepare(data, mime_type="application/pdf", filename="invoice.pdf", limits=LIMITS)
    assert isinstance(result, PreparedPdf)
    assert result.pages == 2
    assert result.data == data
    # each page: its text plus a page image (612x792 pt rendered at 1212x1568 px -> 2534 tokens)
    assert 2 * 2534 < result.tokens < 2 * 2534 + 40


def test_pdf_over_the_page_limit_becomes_its_extracted_text() -> None:
    data = pdf_bytes([f"clause {i}" for i in range(1, 8)])
    result = prepare(data, mime_type="application/pdf", filename="c.pdf", limits=MediaLimits(pdf_max_pages=5))
    assert isinstance(result, PreparedText)
    assert "over the 5-page limit" in result.note
    assert "clause 1" in result.text
    assert "clause 7" in result.text


def test_pdf_limits_follow_the_context_window() -> None:
    assert MediaLimits.for_window(200_000).pdf_max_pages == 100
    assert MediaLimits.for_window(1_000_000).pdf_max_pages == 600
    assert MediaLimits.for_window(200_000).pdf_max_tokens == 40_000


def test_damaged_pdf_is_refused() -> None:
    result = prepare(
        b"%PDF-1.4\n garbage garbage", mime_type="application/pdf", filename="x.pdf", limits=LIMITS
    )
    assert isinstance(result, Refused)
    assert "PDF" in result.reason


def test_text_files_are_decoded_with_fallbacks() -> None:
    assert decode_text("héllo\r\nworld".encode()) == "héllo\nworld"
    assert decode_text("\ufeffbom".encode()) == "bom"
    assert decode_text("naïve".encode("utf-16")) == "naïve"
    assert decode_text("café".encode("cp1252")) == "café"
    result = prepare(b"a,b\n1,2\n", mime_type="text/csv", filename="t.csv", limits=LIMITS)
    assert result == PreparedText(text="a,b\n1,2\n", note="text file")


def test_routes_trust_the_bytes_over_the_declared_type() -> None:
    png = image_bytes(10, 10, "PNG")
    assert route_for("application/octet-stream", "notes.txt", png) is Route.IMAGE
    assert route_for(None, "server.log", b"2026-11-24 started\n") is Route.TEXT
    assert route_for("application/octet-stream", "blob", b"plain words\n") is Route.TEXT
    assert route_for("application/zip", "a.zip", b"PK\x03\x04\x00\x00binary\x00") is Route.UNSUPPORTED
    unsupported = prepare(
        b"PK\x03\x04\x00\x00\x00", mime_type="application/zip", filename="a.zip", limits=LIMITS
    )
    assert unsupported == Refused("this type of file is not supported")


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header declares `width` x `height` (Pillow reads the size before any pixel)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


def test_an_empty_file_is_refused_as_empty() -> None:
    assert prepare(b"", mime_type="image/png", filename="x.png", limits=LIMITS) == Refused(
        "the file is empty"
    )


def test_an_enormous_image_is_refused_as_too_large_not_as_damaged() -> None:
    result = prepare(_png_header(40_000, 40_000), mime_type="image/png", filename="big.png", limits=LIMITS)
    assert result == Refused("the image is too large (over 64 megapixels)")
