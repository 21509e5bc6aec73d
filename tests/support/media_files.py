"""Real files for media tests, made on the spot: JPEG/PNG/WebP/BMP images with Pillow and small PDFs
written by hand (one text line per page, Helvetica), so pypdf and the fake API parse genuine bytes."""

from __future__ import annotations

import io
import zlib

from PIL import Image, ImageDraw


def image_bytes(width: int, height: int, fmt: str = "JPEG", *, seed: int = 0, noise: bool = False) -> bytes:
    """An image of the given size and format; `seed` changes its content (so the sha256 differs)."""
    if noise:
        image = Image.effect_noise((width, height), 64).convert("RGB")
    else:
        image = Image.new("RGB", (width, height), ((seed * 37) % 256, (seed * 91) % 256, 180))
        draw = ImageDraw.Draw(image)
        draw.rectangle((width // 4, height // 4, width // 2, height // 2), fill=(255, 255, 255))
        draw.text((10, 10), f"image {seed}", fill=(0, 0, 0))
    if fmt in ("PNG", "WEBP", "GIF") and not noise:
        image = image.convert("RGBA")
    out = io.BytesIO()
    image.save(out, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return out.getvalue()


def corrupt_jpeg() -> bytes:
    """Starts like a JPEG, is not one."""
    return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x13\x37" * 400


def pdf_bytes(pages: list[str], *, page_size: tuple[int, int] = (612, 792)) -> bytes:
    """A valid PDF with one line of text per page."""
    objects: list[bytes] = []
    width, height = page_size
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font_id = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        content_id = 4 + 2 * i
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] "
            f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {content_id} 0 R >>".encode()
        )
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = zlib.compress(f"BT /F1 12 Tf 72 {height - 72} Td ({escaped}) Tj ET".encode("latin-1"))
        objects.append(
            f"<< /Length {len(stream)} /Filter /FlateDecode >>\nstream\n".encode() + stream + b"\nendstream"
        )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()
