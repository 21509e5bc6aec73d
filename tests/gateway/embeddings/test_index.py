"""The in-memory vector index: loads a chat once then only what is new, ranks by similarity, stays bounded."""

from __future__ import annotations

import numpy as np

from gateway.embeddings.index import VectorIndex


def vec(*values: float) -> bytes:
    v = np.asarray(values, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype("<f4").tobytes()


class Vectors:
    def __init__(self) -> None:
        self.rows: dict[int, list[tuple[int, bytes]]] = {}
        self.loads: list[tuple[int, int]] = []

    async def load(self, chat_pk: int, after_id: int, limit: int) -> list[tuple[int, bytes]]:
        self.loads.append((chat_pk, after_id))
        return [r for r in self.rows.get(chat_pk, []) if r[0] > after_id][:limit]


async def test_nearest_first_and_incremental_loads() -> None:
    store = Vectors()
    store.rows[1] = [(10, vec(1, 0)), (11, vec(0, 1)), (12, vec(1, 1))]
    index = VectorIndex(store.load, max_bytes=1 << 20)
    query = np.asarray([1.0, 0.1], dtype=np.float32)
    assert await index.nearest(1, query, 2) == [10, 12]
    store.rows[1].append((13, vec(1, 0.05)))
    assert await index.nearest(1, query, 5) == [13, 10, 12, 11]
    assert store.loads == [(1, 0), (1, 12)]
    assert await index.nearest(2, query, 5) == []


async def test_memory_is_bounded_by_dropping_the_least_recent_chat() -> None:
    store = Vectors()
    for chat in (1, 2, 3):
        store.rows[chat] = [(chat * 100 + i, vec(1, i)) for i in range(10)]
    per_chat = 10 * (8 + 2 * 4)
    index = VectorIndex(store.load, max_bytes=2 * per_chat)
    query = np.asarray([1.0, 0.0], dtype=np.float32)
    for chat in (1, 2, 3):
        await index.nearest(chat, query, 1)
    assert index.nbytes <= 2 * per_chat
    store.loads.clear()
    await index.nearest(1, query, 1)  # dropped earlier: loaded again from the start
    assert store.loads == [(1, 0)]
