"""Tagged data blocks: untrusted text wrapped in a tag it cannot close, and the per-request `<context>`.

Dynamic context (date, chat title, speaker) goes into the newest user message as a `<context>` block,
never into the system prompt, so the cached prefix stays byte-stable between turns. What a message
replies to travels with it as a `<reply_to author="...">` block, cut to a bounded length.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from agent.types import Block

_TAG_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_CONTEXT_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_ -]*$")
CONTEXT_TAG: Final = "context"
REPLY_TAG: Final = "reply_to"
_ATTR_UNSAFE = str.maketrans({'"': "'", "<": "‹", ">": "›"})


def _neutralise(text: str, tag: str) -> str:
    """Make every closing (and opening) `tag` inside the text inert, so data cannot end its wrapper."""
    pattern = re.compile(r"<(\s*/?\s*" + re.escape(tag) + r")(?![A-Za-z0-9_.-])", re.IGNORECASE)
    return pattern.sub(r"&lt;\1", text)


def wrap_data(tag: str, text: str, attrs: Mapping[str, str] | None = None) -> str:
    """`<tag a="v">\\ntext\\n</tag>`, with any `<tag>` / `</tag>` inside the text neutralised and the
    attribute values flattened to one line that cannot end the attribute or the tag."""
    if not _TAG_NAME.match(tag):
        raise ValueError(f"invalid tag name {tag!r}")
    opening = tag
    for name, value in (attrs or {}).items():
        if not _TAG_NAME.match(name):
            raise ValueError(f"invalid attribute name {name!r}")
        opening += f' {name}="{" ".join(value.split()).translate(_ATTR_UNSAFE)}"'
    return f"<{opening}>\n{_neutralise(text, tag)}\n</{tag}>"


def clip(text: str, max_chars: int) -> str:
    """`text` if it has at most `max_chars` characters; else its head, cut at a word boundary when one
    is near, followed by a note saying how many characters were left out."""
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= max_chars * 4 // 5:
        head = head[:space]
    head = head.rstrip()
    return f"{head} … [{len(text) - len(head):,} more characters not shown]"


def reply_block(author: str, text: str, *, quoted_part: bool, max_chars: int) -> Block:
    """What a message replies to: its author and its text (or only the part quoted), bounded."""
    attrs = {"author": author}
    if quoted_part:
        attrs["quoted"] = "part"
    return {"type": "text", "text": wrap_data(REPLY_TAG, clip(text.strip(), max_chars), attrs)}


def context_block(context: Mapping[str, str]) -> Block:
    """The `<context>` text block: one `key: value` line per entry, values on one line and escaped."""
    lines: list[str] = []
    for key, value in context.items():
        if not _CONTEXT_KEY.match(key):
            raise ValueError(f"invalid context key {key!r}")
        flat = " ".join(str(value).split())
        lines.append(f"{key}: {flat}")
    return {"type": "text", "text": wrap_data(CONTEXT_TAG, "\n".join(lines))}
