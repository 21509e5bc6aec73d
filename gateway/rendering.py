"""How an incoming platform message becomes stored conversation content (pure).

What is stored is what the model will see: in groups the speaker's (sanitised) name leads the text,
forwarded content is wrapped as tagged data, media the bot cannot read yet is noted in brackets.
The raw platform text never becomes an instruction channel: names are single-line and bounded.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from gateway.platforms.base import ChatKind, IncomingMessage

MAX_NAME_CHARS = 48
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")

UNSUPPORTED_MEDIA_REPLY = (
    "I can only read text for now — {what} {verb} not supported yet. Please describe it in words."
)


def clean_name(name: str) -> str:
    """A display name safe to put in front of a message: one line, no control/bidi characters, bounded."""
    name = unicodedata.normalize("NFKC", name).replace("\n", " ").replace("\r", " ").replace("\t", " ")
    name = _CONTROL.sub("", name)
    name = " ".join(name.split()).replace("[", "(").replace("]", ")")
    if len(name) > MAX_NAME_CHARS:
        name = name[: MAX_NAME_CHARS - 1] + "…"
    return name or "someone"


def clean_text(text: str) -> str:
    """Replace NUL and lone surrogates (which databases and JSON reject) so any text can be stored."""
    text = text.replace("\x00", "\ufffd")
    return text.encode("utf-8", "replace").decode("utf-8") if _has_surrogate(text) else text


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _escape_tag(text: str, tag: str) -> str:
    return text.replace(f"</{tag}", f"<\\/{tag}")


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str
    """The text the model sees for this message (empty when there is nothing to store)."""
    unsupported_media: tuple[str, ...] = ()


def render_incoming(msg: IncomingMessage) -> Rendered:
    body = clean_text(msg.text or "").strip()
    caption = clean_text(msg.caption or "").strip()
    notes: list[str] = []
    unsupported: list[str] = []
    for kind in msg.media:
        unsupported.append(kind)
        notes.append(f"[sent a {kind}{': ' + caption if caption else ''}]")
    if caption and not msg.media:
        body = (body + "\n" + caption).strip()
    if msg.is_forwarded and body:
        # A quote in the origin's name must not end the attribute and forge markup around the content.
        origin = clean_name(msg.forward_origin or "unknown").replace('"', "'")
        body = f'<forwarded from="{origin}">\n{_escape_tag(body, "forwarded")}\n</forwarded>'
    if msg.is_edit and body:
        body = f"(edited an earlier message) {body}"
    text = "\n".join(p for p in [*notes, body] if p)
    if text and msg.chat.kind is not ChatKind.PRIVATE:
        text = f"[{clean_name(msg.author.display_name)}] {text}"
    return Rendered(text=text, unsupported_media=tuple(unsupported))


def unsupported_media_reply(kinds: tuple[str, ...]) -> str:
    names = {
        "photo": "photos",
        "sticker": "stickers",
        "voice": "voice messages",
        "audio": "audio files",
        "video": "videos",
        "document": "documents",
        "animation": "animations",
    }
    what = ", ".join(dict.fromkeys(names.get(k, "attachments") for k in kinds))
    return UNSUPPORTED_MEDIA_REPLY.format(what=what[:1].upper() + what[1:], verb="are")
