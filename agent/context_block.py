"""Tagged data blocks: untrusted text wrapped in a tag it cannot close, and the per-request `<context>`.

Dynamic context (date, chat title, speaker) goes into the newest user message as a `<context>` block,
never into the system prompt, so the cached prefix stays byte-stable between turns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from agent.types import Block

_TAG_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_CONTEXT_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_ -]*$")
CONTEXT_TAG: Final = "context"


def _neutralise(text: str, tag: str) -> str:
    """Make every closing (and opening) `tag` inside the text inert, so data cannot end its wrapper."""
    pattern = re.compile(r"<(\s*/?\s*" + re.escape(tag) + r")(?![A-Za-z0-9_.-])", re.IGNORECASE)
    return pattern.sub(r"&lt;\1", text)


def wrap_data(tag: str, text: str) -> str:
    """`<tag>\\ntext\\n</tag>`, with any `<tag>` / `</tag>` inside the text neutralised."""
    if not _TAG_NAME.match(tag):
        raise ValueError(f"invalid tag name {tag!r}")
    return f"<{tag}>\n{_neutralise(text, tag)}\n</{tag}>"


def context_block(context: Mapping[str, str]) -> Block:
    """The `<context>` text block: one `key: value` line per entry, values on one line and escaped."""
    lines: list[str] = []
    for key, value in context.items():
        if not _CONTEXT_KEY.match(key):
            raise ValueError(f"invalid context key {key!r}")
        flat = " ".join(str(value).split())
        lines.append(f"{key}: {flat}")
    return {"type": "text", "text": wrap_data(CONTEXT_TAG, "\n".join(lines))}
