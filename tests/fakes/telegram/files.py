"""Files in the fake Bot API: `getFile`, downloads at `/file/bot<token>/<file_path>`, and builders for
photo, document, sticker, voice, audio, video note and album updates carrying real bytes.

As in the real API: `getFile` answers a File object with a relative `file_path`; files above 20 MB are
refused with "Bad Request: file is too big"; an unknown id gets "Bad Request: invalid file_id". A photo
update carries several sizes (each its own file), smallest first.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from PIL import Image

from tests.fakes.telegram.updates import UpdateBuilder
from tests.fakes.telegram.wire import ApiError, Params
from tests.support.media_files import pdf_bytes

BOT_DOWNLOAD_LIMIT = 20 * 1024 * 1024
PHOTO_SIDES = (90, 320, 800, 1280, 2560)
"""Long edges of the sizes Telegram makes of a photo (never larger than the original)."""


@dataclass
class StoredFile:
    file_id: str
    unique_id: str
    data: bytes
    file_path: str


def _default_image(width: int, height: int, fmt: str = "JPEG") -> bytes:
    image = Image.new("RGB", (width, height), (40, 120, 200))
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


_DEFAULT_PDF = pdf_bytes(["Quarterly report: revenue up 4%"])


class TelegramFiles(UpdateBuilder):
    """`FakeTelegram`'s update builder with files: owns the files and the file-carrying update builders."""

    token: str
    files: dict[str, StoredFile]
    downloads: list[str]

    def _wake(self) -> None:  # pragma: no cover - FakeTelegram's
        raise NotImplementedError

    def _init_files(self) -> None:
        self.files = {}
        self.downloads = []
        self._file_ids = itertools.count(1)

    def default_media(self, kind: str) -> Any:
        """Real, downloadable files for `photo=True`, `document=True`... (voice and the like are never
        downloaded, so they keep their plain payloads)."""
        if kind == "photo":
            return self.photo_sizes(_default_image(800, 533))
        if kind == "sticker":
            stored = self.add_file(_default_image(512, 512, "WEBP"), folder="stickers", name="sticker.webp")
            return {
                "file_id": stored.file_id,
                "file_unique_id": stored.unique_id,
                "type": "regular",
                "width": 512,
                "height": 512,
                "is_animated": False,
                "is_video": False,
                "emoji": "👍",
                "file_size": len(stored.data),
            }
        if kind == "document":
            stored = self.add_file(_DEFAULT_PDF, name="report.pdf")
            return {
                "file_id": stored.file_id,
                "file_unique_id": stored.unique_id,
                "file_name": "report.pdf",
                "mime_type": "application/pdf",
                "file_size": len(_DEFAULT_PDF),
            }
        return super().default_media(kind)

    # -- files ---------------------------------------------------------------------------------------

    def add_file(self, data: bytes, *, folder: str = "documents", name: str = "file") -> StoredFile:
        n = next(self._file_ids)
        stored = StoredFile(f"file-{n}", f"uniq-{n}", data, f"{folder}/file_{n}_{name}")
        self.files[stored.file_id] = stored
        return stored

    async def _m_getfile(self, params: Params) -> dict[str, Any]:
        stored = self.files.get(params.get_str("file_id") or "")
        if stored is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        if len(stored.data) > BOT_DOWNLOAD_LIMIT:
            raise ApiError(400, "Bad Request: file is too big")
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "file_size": len(stored.data),
            "file_path": stored.file_path,
        }

    async def _serve_file(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.Response(status=401, text="Unauthorized")
        path = request.match_info["path"]
        for stored in self.files.values():
            if stored.file_path == path:
                self.downloads.append(path)
                self._wake()
                return web.Response(body=stored.data, content_type="application/octet-stream")
        return web.Response(status=404, text="Not Found")

    # -- update builders -----------------------------------------------------------------------------

    def photo_sizes(self, image: bytes) -> list[dict[str, Any]]:
        """The sizes Telegram would offer for `image` (JPEG re-encodes below the original)."""
        with Image.open(io.BytesIO(image)) as original:
            width, height = original.size
            longest = max(width, height)
            sides = [s for s in PHOTO_SIDES if s < longest][:3]
            sizes = []
            for side in sides:
                scaled = original.convert("RGB").resize(
                    (max(1, width * side // longest), max(1, height * side // longest))
                )
                out = io.BytesIO()
                scaled.save(out, "JPEG", quality=80)
                sizes.append(self._photo_size(out.getvalue(), *scaled.size))
        sizes.append(self._photo_size(image, width, height))
        return sizes

    def _photo_size(self, data: bytes, width: int, height: int) -> dict[str, Any]:
        stored = self.add_file(data, folder="photos", name="photo.jpg")
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "width": width,
            "height": height,
            "file_size": len(data),
        }

    def push_photo(
        self, chat_id: int, image: bytes, *, caption: str | None = None, **kw: Any
    ) -> dict[str, Any]:
        return self.push_message(chat_id, photo=self.photo_sizes(image), caption=caption, **kw)

    def push_document(
        self,
        chat_id: int,
        data: bytes,
        *,
        file_name: str,
        mime_type: str | None,
        caption: str | None = None,
        declared_size: int | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        stored = self.add_file(data, name=file_name)
        document: dict[str, Any] = {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "file_name": file_name,
            "file_size": declared_size if declared_size is not None else len(data),
        }
        if mime_type:
            document["mime_type"] = mime_type
        return self.push_message(chat_id, document=document, caption=caption, **kw)

    def push_sticker(
        self, chat_id: int, image: bytes, *, emoji: str = "👍", animated: bool = False, **kw: Any
    ) -> dict[str, Any]:
        stored = self.add_file(image, folder="stickers", name="sticker.webp")
        sticker: dict[str, Any] = {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "type": "regular",
            "width": 512,
            "height": 512,
            "is_animated": animated,
            "is_video": False,
            "emoji": emoji,
            "file_size": len(image),
        }
        if animated:
            sticker["thumbnail"] = {**self._photo_size(image, 128, 128)}
        return self.push_message(chat_id, sticker=sticker, **kw)

    def push_voice(
        self,
        chat_id: int,
        *,
        seconds: int = 3,
        data: bytes | None = None,
        caption: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        """A voice note as Telegram sends it: Opus in Ogg, stored as `voice/file_N.oga`."""
        sound = data if data is not None else b"OggS" + bytes(200)
        stored = self.add_file(sound, folder="voice", name="voice.oga")
        voice = {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "duration": seconds,
            "mime_type": "audio/ogg",
            "file_size": len(sound),
        }
        return self.push_message(chat_id, voice=voice, caption=caption, **kw)

    def push_audio(
        self,
        chat_id: int,
        data: bytes,
        *,
        seconds: int = 30,
        file_name: str = "memo.mp3",
        mime_type: str = "audio/mpeg",
        caption: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        """An audio file (sent as music, not recorded in the app), stored under `music/`."""
        stored = self.add_file(data, folder="music", name=file_name)
        audio = {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "duration": seconds,
            "file_name": file_name,
            "mime_type": mime_type,
            "file_size": len(data),
        }
        return self.push_message(chat_id, audio=audio, caption=caption, **kw)

    def push_video_note(self, chat_id: int, data: bytes, *, seconds: int = 5, **kw: Any) -> dict[str, Any]:
        """A round video message: MP4, square (`length` is its side), no caption, no MIME type."""
        stored = self.add_file(data, folder="video_notes", name="video_note.mp4")
        video_note = {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "length": 384,
            "duration": seconds,
            "file_size": len(data),
        }
        return self.push_message(chat_id, video_note=video_note, **kw)

    def push_album(
        self,
        chat_id: int,
        images: list[bytes],
        *,
        caption: str | None = None,
        group_id: str = "album-1",
        **kw: Any,
    ) -> list[dict[str, Any]]:
        """Several photos with one media_group_id, as separate updates; the caption rides on the first."""
        return [
            self.push_message(
                chat_id,
                photo=self.photo_sizes(image),
                caption=caption if i == 0 else None,
                extra={"media_group_id": group_id},
                **kw,
            )
            for i, image in enumerate(images)
        ]
