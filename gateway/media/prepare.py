"""Downloaded bytes -> what is stored and shown to the model (no I/O; CPU-bound, run it in a thread).

- Images are decoded with Pillow (a file that cannot be decoded is refused with a clear reason), turned
  upright from their EXIF orientation, downscaled to the native long edge when larger, and re-encoded
  when their format is not one the API takes or the encoded image is above the API's 5 MB (base64) cap.
- PDFs are counted with pypdf. Within the request limits (size, pages, a share of the window) they are
  stored as documents; past them their text is extracted and handled like any long text.
- Text files are decoded (UTF-8, UTF-16 with a byte-order mark, else Windows-1252) and kept as text.
"""

from __future__ import annotations

import io
import logging
import math
import warnings
from dataclasses import dataclass

from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError
from pypdf import PdfReader
from pypdf.errors import PdfReadError, PyPdfError

from agent.media import NATIVE_LONG_EDGE, fit_within, image_tokens, page_image_tokens
from agent.tokens import estimate_text
from gateway.media.kinds import Route, route_for

logger = logging.getLogger(__name__)

MB = 1024 * 1024
API_IMAGE_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif", "WEBP": "image/webp"}
IMAGE_BASE64_MAX = 5 * MB
"""The API's per-image cap applies to the base64 text, so raw bytes may be at most 3/4 of it."""
IMAGE_RAW_MAX = IMAGE_BASE64_MAX * 3 // 4
MAX_SOURCE_PIXELS = 64_000_000
"""Larger images are refused before decoding (a decompression bomb, or a panorama no one needs whole)."""
JPEG_QUALITIES = (88, 80, 70, 60)
PDF_REQUEST_MAX = 32 * MB
PDF_RAW_MAX = PDF_REQUEST_MAX * 3 // 4 - MB
"""A PDF goes base64-encoded inside a request of at most 32 MB; leave room for the rest of it."""


@dataclass(frozen=True, slots=True)
class MediaLimits:
    """The limits preparation works to; `for_window` derives the PDF ones from the model's window."""

    image_long_edge: int = NATIVE_LONG_EDGE
    pdf_max_pages: int = 100
    pdf_max_tokens: int = 40_000
    """A PDF whose pages would cost more than this goes to the model as extracted text instead."""

    @classmethod
    def for_window(cls, context_window: int, *, image_long_edge: int = NATIVE_LONG_EDGE) -> MediaLimits:
        # 100 pages per request on 200K-context models, 600 on the 1M-context ones; and at most a fifth
        # of the window for one document (under the quarter the oversize path allows one message, so
        # the text sent with it is never cut to make room for pages that cannot be cut).
        pages = 600 if context_window >= 1_000_000 else 100
        return cls(image_long_edge=image_long_edge, pdf_max_pages=pages, pdf_max_tokens=context_window // 5)


@dataclass(frozen=True, slots=True)
class PreparedImage:
    data: bytes
    media_type: str
    width: int
    height: int
    tokens: int
    source_size: tuple[int, int]
    """Width and height as received (before any downscale)."""

    @property
    def resized(self) -> bool:
        return self.source_size != (self.width, self.height)


@dataclass(frozen=True, slots=True)
class PreparedPdf:
    data: bytes
    pages: int
    tokens: int
    text_chars: int


@dataclass(frozen=True, slots=True)
class PreparedText:
    text: str
    note: str
    """Why this arrived as text, for the model (e.g. "PDF, 312 pages: over the 100-page limit")."""


@dataclass(frozen=True, slots=True)
class Refused:
    reason: str
    """For the sender, e.g. "the file is damaged or not an image"."""


Prepared = PreparedImage | PreparedPdf | PreparedText | Refused


def prepare(data: bytes, *, mime_type: str | None, filename: str | None, limits: MediaLimits) -> Prepared:
    """Route the bytes by what they are and prepare them; never raises for bad input."""
    if not data:
        return Refused("the file is empty")
    route = route_for(mime_type, filename, data)
    if route is Route.IMAGE:
        return prepare_image(data, long_edge=limits.image_long_edge)
    if route is Route.PDF:
        return prepare_pdf(data, limits=limits)
    if route is Route.TEXT:
        return PreparedText(text=decode_text(data), note="text file")
    return Refused("this type of file is not supported")


# -- images ---------------------------------------------------------------------------------------


def prepare_image(data: bytes, *, long_edge: int = NATIVE_LONG_EDGE) -> PreparedImage | Refused:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image: Image.Image = Image.open(io.BytesIO(data))
            source_format = image.format or ""
            width, height = image.size
            if width * height > MAX_SOURCE_PIXELS:
                return Refused(f"the image is too large ({width}x{height} pixels)")
            if source_format == "JPEG" and max(width, height) > long_edge:
                # Decode at a reduced scale (never below the target): far less work for big photos.
                image.draft("RGB", fit_within(width, height, long_edge))
            image.load()
            orientation = image.getexif().get(ExifTags.Base.Orientation, 1)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        # Pillow refuses to open it at all: an intact image far past what is accepted.
        return Refused(f"the image is too large (over {MAX_SOURCE_PIXELS // 1_000_000} megapixels)")
    except UnidentifiedImageError:
        return Refused("the file is damaged or not an image")
    except (OSError, SyntaxError, ValueError) as exc:  # Pillow's errors for truncated or broken data
        logger.info("image could not be decoded: %s", exc)
        return Refused("the file is damaged or not an image")
    unchanged = (
        orientation == 1
        and max(width, height) <= long_edge
        and source_format in API_IMAGE_TYPES
        and image.mode in _PLAIN_MODES
        and not getattr(image, "is_animated", False)
        and len(data) <= IMAGE_RAW_MAX
    )
    if unchanged:
        media_type = API_IMAGE_TYPES[source_format]
        return PreparedImage(data, media_type, width, height, image_tokens(width, height), (width, height))
    if image.mode == "P" or image.mode not in _PLAIN_MODES:
        image = image.convert("RGBA" if _has_alpha(image) else "RGB")
    if orientation != 1:
        image = ImageOps.exif_transpose(image)
    target = fit_within(image.width, image.height, long_edge)
    if image.size != target:
        image = image.resize(target, Image.Resampling.LANCZOS)
    encoded = _encode(image, source_format)
    if encoded is None:
        return Refused("the image is too detailed to send even after shrinking it")
    payload, media_type, final = encoded
    tokens = image_tokens(final.width, final.height)
    return PreparedImage(payload, media_type, final.width, final.height, tokens, (width, height))


_PLAIN_MODES = frozenset({"RGB", "RGBA", "L", "LA", "P", "1"})


def _has_alpha(image: Image.Image) -> bool:
    return "A" in image.getbands() or (image.mode == "P" and "transparency" in image.info)


def _encode(image: Image.Image, source_format: str) -> tuple[bytes, str, Image.Image] | None:
    """The image in an API format under the size cap: PNG for lossless sources with few colours or
    transparency, JPEG otherwise; shrinks further only when no quality fits."""
    lossless = source_format in ("PNG", "GIF", "BMP", "TIFF", "WEBP") or image.mode in ("RGBA", "LA")
    candidate = image
    for _ in range(6):
        if lossless:
            png = _save(candidate, "PNG", optimize=True)
            if len(png) <= IMAGE_RAW_MAX:
                return png, "image/png", candidate
        flat = _flatten(candidate)
        for quality in JPEG_QUALITIES:
            jpeg = _save(flat, "JPEG", quality=quality, optimize=True)
            if len(jpeg) <= IMAGE_RAW_MAX:
                return jpeg, "image/jpeg", flat
        w, h = candidate.size
        smaller = (max(1, math.floor(w * 0.75)), max(1, math.floor(h * 0.75)))
        candidate = candidate.resize(smaller, Image.Resampling.LANCZOS)
    return None


def _flatten(image: Image.Image) -> Image.Image:
    """RGB on a white background (JPEG has no alpha channel)."""
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB") if image.mode != "RGB" else image


def _save(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


# -- PDFs -----------------------------------------------------------------------------------------


def prepare_pdf(data: bytes, *, limits: MediaLimits) -> PreparedPdf | PreparedText | Refused:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return Refused("the PDF is password-protected")
        pages = len(reader.pages)
        texts = [_page_text(page) for page in reader.pages]
        sizes = [(float(page.mediabox.width), float(page.mediabox.height)) for page in reader.pages]
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        logger.info("PDF could not be read: %s", exc)
        return Refused("the PDF is damaged and could not be read")
    if pages == 0:
        return Refused("the PDF has no pages")
    text_chars = sum(len(t) for t in texts)
    tokens = sum(estimate_text(t) + page_image_tokens(w, h) for t, (w, h) in zip(texts, sizes, strict=True))
    over = _pdf_over_limits(len(data), pages, tokens, limits)
    if over is None:
        return PreparedPdf(data=data, pages=pages, tokens=tokens, text_chars=text_chars)
    body = "\n\n".join(f"--- page {i} ---\n{t}" for i, t in enumerate(texts, 1) if t.strip())
    if not body.strip():
        return Refused(f"the PDF is {over} and has no text that could be extracted")
    return PreparedText(text=body, note=f"PDF, {pages} pages: {over}, so its extracted text follows")


def _page_text(page: object) -> str:
    try:
        return str(page.extract_text())  # type: ignore[attr-defined]
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        logger.info("text of a PDF page could not be extracted: %s", exc)
        return ""


def _pdf_over_limits(size: int, pages: int, tokens: int, limits: MediaLimits) -> str | None:
    if size > PDF_RAW_MAX:
        return f"over the {PDF_RAW_MAX // MB} MB a request can carry"
    if pages > limits.pdf_max_pages:
        return f"over the {limits.pdf_max_pages}-page limit"
    if tokens > limits.pdf_max_tokens:
        return f"too long to show whole (about {tokens:,} tokens as pages)"
    return None


# -- text -----------------------------------------------------------------------------------------


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM allowed), UTF-16 with a BOM, else Windows-1252 (every byte maps to something)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace").replace("\x00", "\ufffd")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")
    return text.replace("\x00", "\ufffd").replace("\r\n", "\n")
