"""Put a chat's earlier history straight into the store: for benchmarks that start from a long session."""

from __future__ import annotations

import random
from typing import Any, Literal

from agent.tokens import estimate_message
from gateway.store import CompactionApply, NewMessage, NewSummary, Store

BATCH = 500
_TEXT = "we looked at the deploy logs and the invoice and the plan for the trip on saturday"
_WORDS = _TEXT.split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


async def seed_history(
    store: Store, session_pk: int, count: int, *, keep_active: int, words: int = 40, seed: int = 5
) -> None:
    """Append `count` alternating user/assistant messages; archive all but the newest `keep_active`
    behind a summary, as compaction would have."""
    rng = random.Random(seed)
    ids: list[int] = []
    for start in range(0, count, BATCH):
        batch = []
        for i in range(start, min(count, start + BATCH)):
            role: Literal["user", "assistant"] = "user" if i % 2 == 0 else "assistant"
            content: list[dict[str, Any]] = [{"type": "text", "text": _text(rng, words)}]
            batch.append(
                NewMessage(
                    role=role,
                    content=content,
                    text=str(content[0]["text"]),
                    author_id="seed-user" if role == "user" else "assistant",
                    author_name="Sam" if role == "user" else "assistant",
                    platform_message_id=f"seed{i}" if role == "user" else None,
                    token_estimate=estimate_message({"role": role, "content": content}),
                    needs_reply=False,
                    created_at=store.now(),
                )
            )
        results = await store.append_messages(session_pk, batch)
        ids += [r.message.id for r in results]
    archived = ids[: max(0, len(ids) - keep_active)]
    if not archived or len(ids) <= keep_active:
        return
    summary = "## Goal\nHelp Sam plan.\n## Progress\n### Done\n- " + _text(rng, 60)
    await store.apply_compaction(
        session_pk,
        CompactionApply(
            trigger="manual",
            outcome="ok",
            removed_ids=archived,
            summary=NewSummary(
                role="user",
                content=[{"type": "text", "text": summary}],
                text=summary,
                token_estimate=estimate_message({"role": "user", "content": summary}),
            ),
            insert_summary_before_id=ids[len(archived)],
            messages_before=len(ids),
            messages_after=keep_active + 1,
        ),
    )
