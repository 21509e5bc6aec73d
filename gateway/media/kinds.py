"""What kind of file an attachment is, from its declared type, its name and its first bytes (pure).

The declared MIME type and the file name decide the route; the magic bytes win when they disagree
(a photo sent as `application/octet-stream`, a `.txt` that is really a PNG), so preparation never
feeds a PDF parser an image or calls a binary file text.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import PurePosixPath


class Route(StrEnum):
    IMAGE = "image"
    PDF = "pdf"
    TEXT = "text"
    UNSUPPORTED = "unsupported"


_TEXT_EXTENSIONS_LIST = """
    txt text md markdown rst csv tsv json jsonl ndjson log xml yaml yml toml ini cfg conf env properties
    py pyi js mjs cjs ts tsx jsx java kt kts scala go rs rb php pl lua r swift m mm c h cc cpp cxx hpp hh cs
    fs vb sh bash zsh fish ps1 bat cmd sql graphql proto tf hcl dockerfile makefile gradle cmake html htm
    css scss sass less vue svelte tex bib srt vtt diff patch gitignore editorconfig lock sum mod csproj
"""
TEXT_EXTENSIONS = frozenset(_TEXT_EXTENSIONS_LIST.split())
TEXT_MIME_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/x-ndjson",
        "application/xml",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/javascript",
        "application/x-javascript",
        "application/typescript",
        "application/x-sh",
        "application/x-python",
        "application/x-python-code",
        "application/sql",
        "application/x-subrip",
        "application/csv",
    }
)
IMAGE_EXTENSIONS = frozenset({"jpg", "jpeg", "png", "gif", "webp", "bmp", "tif", "tiff", "heic", "ico"})


def extension(filename: str | None) -> str:
    if not filename:
        return ""
    path = PurePosixPath(filename.replace("\\", "/"))
    suffix = path.suffix.lower().lstrip(".")
    return suffix or path.name.lower()  # "Dockerfile", "Makefile"


def sniff(head: bytes) -> Route | None:
    """The route the first bytes prove, if any."""
    if head.startswith(b"%PDF-"):
        return Route.PDF
    if (
        head.startswith((b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"BM"))
        or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")
        or head[:4] in (b"II*\x00", b"MM\x00*")
    ):
        return Route.IMAGE
    return None


def declared_route(mime_type: str | None, filename: str | None) -> Route:
    """The route the sender's metadata claims (before any byte is read)."""
    mime = (mime_type or "").split(";", 1)[0].strip().lower()
    ext = extension(filename)
    if mime == "application/pdf" or ext == "pdf":
        return Route.PDF
    if mime.startswith("image/") or ext in IMAGE_EXTENSIONS:
        return Route.IMAGE
    if mime.startswith("text/") or mime in TEXT_MIME_TYPES or ext in TEXT_EXTENSIONS:
        return Route.TEXT
    return Route.UNSUPPORTED


def route_for(mime_type: str | None, filename: str | None, data: bytes) -> Route:
    """Where the downloaded bytes go: the magic bytes when they are known, else the metadata; a file
    that claims nothing we read but decodes as text is read as text."""
    proven = sniff(data[:16])
    if proven is not None:
        return proven
    declared = declared_route(mime_type, filename)
    if declared in (Route.IMAGE, Route.PDF):
        return declared  # preparation reports it as damaged
    if declared is Route.TEXT or looks_like_text(data):
        return Route.TEXT
    return Route.UNSUPPORTED


def looks_like_text(data: bytes, sample: int = 8192) -> bool:
    """No NUL bytes (UTF-16 aside) and almost no control characters in the first `sample` bytes."""
    head = data[:sample]
    if not head:
        return False
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    if b"\x00" in head:
        return False
    controls = sum(1 for b in head if b < 9 or 13 < b < 32)
    return controls <= len(head) // 100
