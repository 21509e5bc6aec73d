"""How an incoming platform message becomes stored conversation content (pure).

What is stored is what the model will see: in groups the speaker's (sanitised) name leads the text,
forwarded content is wrapped as tagged data, attachments are named by short labels (the bytes of images
and PDFs travel as separate blocks) and anything the bot cannot read is noted in brackets.
The raw platform text never becomes an instruction channel: names are single-line and bounded.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.platforms.base import ChatKind, IncomingMessage

MAX_NAME_CHARS = 48
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


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


def render_incoming(msg: IncomingMessage, media_labels: Sequence[str] = ()) -> Rendered:
    """The stored text of `msg`; `media_labels` stand for its attachments (see `gateway.media`)."""
    body = clean_text(msg.text or "").strip()
    caption = clean_text(msg.caption or "").strip()
    notes = [clean_text(label) for label in media_labels]
    covered = {a.kind for a in msg.attachments}
    unsupported: list[str] = []
    for kind in msg.media:
        if kind in covered:
            continue  # the attachment's own label says what it was
        unsupported.append(kind)
        notes.append(f"[sent a {kind}]")
    if caption:
        body = (body + "\n" + caption).strip()
    if msg.is_forwarded and body:
        # A quote in the origin's name must not end the attribute and forge markup around the content.
        origin = clean_name(msg.forward_origin or "unknown").replace('"', "'")
        body = f'<forwarded from="{origin}">\n{_escape_tag(body, "forwarded")}\n</forwarded>'
    if msg.is_edit and body:
        body = f"(edited an earlier message) {body}"
    text = "\n".join(p for p in [*notes, body] if p)
    if text and msg.chat.kind is not ChatKind.PRIVATE:
        text = _speaker_prefix(msg.author.display_name) + text
    return Rendered(text=text, unsupported_media=tuple(unsupported))


def _speaker_prefix(display_name: str) -> str:
    return f"[{clean_name(display_name)}] "


def unframed(stored_text: str, display_name: str | None) -> str:
    """A stored message's text without the speaker's name that groups put in front of it."""
    if display_name is None:
        return stored_text
    prefix = _speaker_prefix(display_name)
    return stored_text[len(prefix) :] if stored_text.startswith(prefix) else stored_text
