"""Pinned facts as the model sees them (pure): one block of the system prompt, and a note for the
summarizer so a summary does not repeat what every request already carries word for word; and the
session's system prompt, assembled here next to them (`system_prompt`).

The block sits in the system prompt, the most stable part of a request: it is byte-identical from turn
to turn, so the cached prefix holds. On models that take mid-conversation system messages a change is
told in a note after the newest message instead (`pins_note`), so the prompt, its cache and the thinking
bound to it stay as they were; elsewhere changing a pin rewrites the prefix once.
"""

from __future__ import annotations

from collections.abc import Sequence

HEADER = (
    "Pinned facts of this chat (kept word for word by the chat's admins; they stay true until unpinned, "
    "whatever was said since):"
)


SYSTEM_NOTE = (
    "[Note: Some earlier conversation turns have been compacted into a summary to save context space.]"
)
"""Appended to the system prompt once the session has been compacted."""


def system_prompt(base: str, *, compacted: bool, pins: Sequence[str] = ()) -> str:
    """The session's system prompt: byte-stable between compactions and pin changes, with the chat's
    pinned facts and the note once it has been compacted (one line, appended at the first
    compaction)."""
    parts = [base, pins_block(pins), SYSTEM_NOTE if compacted else ""]
    return "\n\n".join(part for part in parts if part)


def pins_block(pins: Sequence[str]) -> str:
    """The system prompt's pinned-facts block, numbered as `/pins` lists them ("" when there are none)."""
    if not pins:
        return ""
    return "\n".join([HEADER, *(f"{n}. {text}" for n, text in enumerate(pins, start=1))])


def summary_note(pins: Sequence[str]) -> str:
    """Told to the summarizer: these facts travel in every request already, so leave them out."""
    if not pins:
        return ""
    listed = "\n".join(f"- {text}" for text in pins)
    return (
        "These facts are pinned: every request carries them word for word, so do not repeat them in "
        f"the summary:\n{listed}"
    )


def pins_note(pins: Sequence[str]) -> str:
    """The note telling the model the chat's pins changed: the whole list as it is now."""
    if not pins:
        return (
            "Note from the chat gateway (not written by a user): the chat's pinned facts were all removed. "
            "Disregard the pinned facts in the system prompt."
        )
    listed = "\n".join(f"{n}. {text}" for n, text in enumerate(pins, start=1))
    return (
        "Note from the chat gateway (not written by a user): the chat's pinned facts changed. From now "
        "on these are the pinned facts, word for word; they replace the list in the system prompt:\n"
        f"{listed}"
    )
