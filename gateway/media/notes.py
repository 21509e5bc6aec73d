"""The words around media (pure): the short labels stored in a message's text, and the one reply a
sender gets when something they sent cannot be read.

Labels name each stored item by its id (`[photo m12]`), so the model, the archive search and later
summaries can refer to it; the bytes themselves travel separately as a `media_ref` block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.context_block import wrap_data

SUPPORTED = (
    "photos, images (JPEG, PNG, GIF, WebP and most others), PDFs and text files "
    "(txt, md, csv, json, code, logs)"
)
_UNREADABLE = {
    "voice": "voice messages",
    "audio": "audio files",
    "video_note": "video messages",
    "video": "videos",
    "animation": "animations",
    "sticker": "animated stickers",
    "other": "this kind of message",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One item the sender should hear about."""

    kind: str
    """The attachment kind ("photo", "document", "voice"...)."""
    name: str | None
    reason: str | None = None
    """Why it could not be read; None for a kind that is not supported at all."""


def _clean(name: str) -> str:
    return " ".join(name.replace("[", "(").replace("]", ")").split())[:120]


def image_label(media_id: int, kind: str, name: str | None, emoji: str | None = None) -> str:
    noun = {"photo": "photo", "sticker": "sticker"}.get(kind, "image")
    if kind == "sticker":
        return f"[sticker m{media_id}{' ' + emoji if emoji else ''}]"
    return f"[{noun} m{media_id}{': ' + _clean(name) if name and kind != 'photo' else ''}]"


def pdf_label(media_id: int, name: str | None, pages: int) -> str:
    title = _clean(name) + ", " if name else ""
    return f"[PDF m{media_id}: {title}{pages} page{'s' if pages != 1 else ''}]"


def text_document(name: str | None, text: str, note: str) -> str:
    """A text file as the model sees it: tagged data, never an instruction channel."""
    title = _clean(name or "file").replace('"', "'")
    body = text.replace("</document", "<\\/document")
    return f'<document name="{title}" note="{note}">\n{body}\n</document>'


AUDIO_KINDS = frozenset({"voice", "audio", "video_note"})
"""Kinds whose sound can be transcribed."""
_HEARD_NOUN = {"voice": "voice message", "audio": "audio file", "video_note": "video message"}
TRANSCRIPT_TAG = "transcript"


def heard_noun(kind: str) -> str:
    return _HEARD_NOUN.get(kind, "voice message")


def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def transcript_label(
    kind: str, media_id: int | None, speaker: str, duration: str | None, text: str, name: str | None = None
) -> str:
    """A transcript as the model sees it: tagged data spoken by `speaker`, never an instruction channel.

    It goes into the message's stored text, which is what recall's full-text index reads."""
    attrs = {"of": heard_noun(kind), "speaker": speaker}
    if duration:
        attrs["duration"] = duration
    if media_id is not None:
        attrs["audio"] = f"m{media_id}"
    if name and kind == "audio":
        attrs["name"] = _clean(name)
    return wrap_data(TRANSCRIPT_TAG, text or "(no speech was heard)", attrs)


def untranscribed_label(kind: str, media_id: int | None, duration: str | None, reason: str) -> str:
    ref = f" m{media_id}" if media_id is not None else ""
    length = f" ({duration})" if duration else ""
    return f"[sent {_a(heard_noun(kind))}{ref}{length} that could not be transcribed: {reason}]"


def unreadable_label(kind: str, name: str | None, reason: str | None, label: str | None = None) -> str:
    what = {"photo": "a photo", "document": "a file", "sticker": "a sticker"}.get(kind, f"a {kind}")
    if kind in AUDIO_KINDS:
        what = _a(heard_noun(kind))
    detail = f" {_clean(name)}" if name else ""
    extra = f" {_clean(label)}" if label else ""
    if reason:
        return f"[sent {what}{detail}{extra} that could not be read: {reason}]"
    return f"[sent {what}{detail}{extra}; the bot cannot read this kind of message]"


def problem_reply(problems: Sequence[Problem], *, answering_text: bool) -> str:
    """One short reply for everything that could not be read; names what is supported."""
    lines: list[str] = []
    unsupported: list[str] = []
    for p in problems:
        if p.kind in AUDIO_KINDS and p.reason is not None:
            lines.append(f"I couldn't transcribe your {heard_noun(p.kind)}: {p.reason}.")
        elif p.reason is None:
            unsupported.append(_UNREADABLE.get(p.kind, "this kind of file"))
        else:
            what = f"“{_clean(p.name)}”" if p.name else ("the photo" if p.kind == "photo" else "the file")
            lines.append(f"I couldn't read {what}: {p.reason}.")
    if unsupported:
        kinds = ", ".join(dict.fromkeys(unsupported))
        lines.append(f"I can't read {kinds} yet.")
    if not all(p.kind in AUDIO_KINDS and p.reason is not None for p in problems):
        lines.append(f"I can read {SUPPORTED}.")
    if answering_text:
        lines.append("I'll answer the text of your message.")
    return " ".join(lines)
