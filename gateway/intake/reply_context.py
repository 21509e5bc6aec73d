"""What a reply carries into the model's context: the replied-to text and its author.

Decided once, when the reply is stored: the block becomes part of the stored message's content, so
every later request renders it byte for byte the same (the cached prefix keeps hitting) and nothing is
fetched again per request. Our stored copy of the replied-to message wins over the platform's (it is
whole, and still there after a compaction archived it or `/new` ended its session); the lookup is by
platform message id strictly within the chat, so another chat's text can never come back. A partial
quote replaces the text: the model sees only what the user quoted. The stored message's own `text`
(what recall indexes) never includes the quote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agent.context_block import reply_block
from agent.types import Block
from gateway.intake.rendering import clean_name, clean_text, unframed
from gateway.platforms.base import ReplyTo
from gateway.store.records import StoredMessage

SELF_AUTHOR = "you (the assistant)"
UNKNOWN_AUTHOR = "someone"
DEFAULT_QUOTE_CHARS = 1000


class OriginalLookup(Protocol):
    async def original_message(self, chat_pk: int, platform_message_id: str) -> StoredMessage | None: ...


@dataclass(frozen=True, slots=True)
class ReplySource:
    author: str
    text: str
    quoted_part: bool
    from_store: bool


def reply_source(reply: ReplyTo, stored: StoredMessage | None) -> ReplySource | None:
    """Who wrote the replied-to message and which text the model sees; None when there is no text."""
    if stored is not None:
        author = SELF_AUTHOR if stored.role == "assistant" else clean_name(stored.author_name or "")
        text = stored.text if stored.role == "assistant" else unframed(stored.text, stored.author_name)
    else:
        author = SELF_AUTHOR if reply.to_bot else clean_name(reply.author_name or UNKNOWN_AUTHOR)
        text = reply.text
    quote = (reply.quote or "").strip()
    quoted_part = bool(quote) and quote != text.strip()
    if quote:
        text = quote
    text = clean_text(text).strip()
    if not text:
        return None
    return ReplySource(author=author, text=text, quoted_part=quoted_part, from_store=stored is not None)


async def reply_context(
    store: OriginalLookup, chat_pk: int, reply: ReplyTo, *, max_chars: int = DEFAULT_QUOTE_CHARS
) -> Block | None:
    """The `<reply_to>` block to store with a reply, or None when there is nothing to show."""
    stored = None
    if reply.platform_message_id is not None:
        stored = await store.original_message(chat_pk, reply.platform_message_id)
    source = reply_source(reply, stored)
    if source is None:
        return None
    return reply_block(source.author, source.text, quoted_part=source.quoted_part, max_chars=max_chars)
