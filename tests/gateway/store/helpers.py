"""Small builders shared by the store tests."""

from __future__ import annotations

from gateway.store import AppendResult, NewMessage, Role, Store


def msg(
    text: str,
    *,
    role: Role = "user",
    pid: str | None = None,
    tokens: int | None = None,
    needs_reply: bool = False,
    author: str = "ann",
) -> NewMessage:
    return NewMessage(
        role=role,
        content=text,
        text=text,
        token_estimate=tokens if tokens is not None else max(1, len(text) // 4),
        author_id=author,
        author_name=author.title(),
        platform_message_id=pid,
        needs_reply=needs_reply,
    )


async def append_one(store: Store, session_pk: int, message: NewMessage) -> AppendResult:
    """Store one message through the store's append path (a batch of one)."""
    return (await store.append_messages(session_pk, [message]))[0]


async def new_chat(store: Store, chat_id: str = "100", *, platform: str = "telegram") -> tuple[int, int]:
    """(chat_pk, session_pk) of a fresh chat."""
    chat = await store.get_or_create_chat(platform, chat_id, None, kind="group", title="Test chat")
    session = await store.active_session(chat.id)
    return chat.id, session.id


async def fill(store: Store, session_pk: int, n: int, *, prefix: str = "m") -> list[int]:
    """Append n alternating user/assistant messages; return their ids."""
    ids = []
    for i in range(n):
        role: Role = "user" if i % 2 == 0 else "assistant"
        result = await append_one(store, session_pk, msg(f"{prefix}{i}", role=role, tokens=10))
        ids.append(result.message.id)
    return ids
