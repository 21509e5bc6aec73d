"""Messages a crash left unanswered, at start-up: answered now, or apologised for when too old.

A user message that asked for a reply and never got one is still unanswered in the store after a
restart. Those younger than `max_age` get a turn as usual; older ones are marked answered and their
sender is told once, in reply to the latest of them, that the question should be asked again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from gateway.errors import SendError
from gateway.platforms.base import ChatKind, ChatRef, OutgoingMessage
from gateway.platforms.router import Platforms
from gateway.store import ChatRecord, Store, StoredMessage

logger = logging.getLogger(__name__)

APOLOGY = (
    "Sorry — I was restarted and could not answer your earlier message in time. "
    "It is kept in the conversation; please ask again if you still need an answer."
)


async def recover_unanswered(
    *,
    store: Store,
    platforms: Platforms,
    schedule: Callable[[ChatRef, int], None],
    max_age: timedelta,
    clock: Callable[[], datetime],
) -> None:
    """Answer turns a crash left unanswered; tell users when they are too old to answer now.

    Only chats of a platform running in `platforms` are looked at; `schedule` starts the chat's turn,
    the apology goes out through `platforms` (a failure is logged); ages are taken at `clock()`.
    """
    pending = await store.unanswered()
    by_chat: dict[int, list[StoredMessage]] = {}
    for row in pending:
        by_chat.setdefault(row.chat_pk, []).append(row)
    now = clock()
    for chat_pk, rows in by_chat.items():
        chat = await store.get_chat(chat_pk)
        if chat is None or not platforms.has(chat.platform):
            continue
        ref = chat_ref(chat)
        stale = [r for r in rows if now - r.created_at > max_age]
        if stale:
            await store.mark_replied([r.id for r in stale])
            apology = OutgoingMessage(
                chat=ref, text=APOLOGY, reply_to_message_id=stale[-1].platform_message_id
            )
            try:
                await platforms.send(apology)
            except SendError as exc:
                logger.error("apology to %s:%s not delivered: %s", chat.platform, chat.chat_id, exc)
        if len(stale) < len(rows):
            logger.info(
                "recovering %d unanswered message(s) in %s:%s",
                len(rows) - len(stale),
                chat.platform,
                chat.chat_id,
            )
            schedule(ref, chat_pk)


async def answer_held(*, store: Store, platforms: Platforms, schedule: Callable[[ChatRef, int], None]) -> int:
    """Start the turn of every chat with unanswered messages (those held for a budget's reset among
    them; a chat whose budget is still spent keeps them, `TurnRunner`); returns how many were started."""
    chats = {row.chat_pk for row in await store.unanswered()}
    started = 0
    for chat_pk in sorted(chats):
        chat = await store.get_chat(chat_pk)
        if chat is not None and platforms.has(chat.platform):
            schedule(chat_ref(chat), chat_pk)
            started += 1
    return started


def chat_ref(chat: ChatRecord) -> ChatRef:
    """Where a stored chat's replies go."""
    return ChatRef(
        platform=chat.platform,
        chat_id=chat.chat_id,
        thread_id=chat.thread_id or None,
        kind=ChatKind(chat.kind),
        title=chat.title,
    )
