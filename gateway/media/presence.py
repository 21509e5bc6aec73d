"""Which chats have media, so the `view_media` tool is offered only where there is something to view
(its definition would otherwise ride along in every request of every text-only chat).

Learned per process from what it sees: media stored by the intake, and at each turn's start the stored
window (a reference, or a label such as `[photo m12]` or `[image m12: ...]` kept by a summary). A
restarted or second worker learns it from the window on the chat's next turn, before any request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from agent.media import is_media_ref

_LABEL = re.compile(r"\[(?:photo|image|sticker|PDF) m\d+")


def mentions_media(content: Any) -> bool:
    if isinstance(content, str):
        return bool(_LABEL.search(content))
    if not isinstance(content, list):
        return False
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if is_media_ref(block) or (block.get("type") == "text" and _LABEL.search(str(block.get("text", "")))):
            return True
        inner = block.get("content")
        if block.get("type") == "tool_result" and isinstance(inner, list) and mentions_media(inner):
            return True
    return False


class MediaPresence:
    def __init__(self) -> None:
        self._chats: set[int] = set()

    def note(self, chat_pk: int) -> None:
        self._chats.add(chat_pk)

    def note_window(self, chat_pk: int, contents: Iterable[Any]) -> None:
        if chat_pk not in self._chats and any(mentions_media(c) for c in contents):
            self._chats.add(chat_pk)

    def __contains__(self, chat_pk: object) -> bool:
        return chat_pk in self._chats
