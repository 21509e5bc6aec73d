"""The in-memory vector index: loads a chat once then only what is new, ranks by similarity, stays bounded."""

from __future__ import annotations

import numpy as np

from gateway.embeddings.index import Filter, VectorIndex


def vec(*values: float) -> bytes:
    v = np.asarray(values, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype("<f4").tobytes()


class Vectors:
    def __init__(self) -> None:
        self.rows: dict[int, list[tuple[int, float, bytes]]] = {}
        self.loads: list[tuple[int, int]] = []

    async def load(self, chat_pk: int, after_id: int, limit: int) -> list[tuple[int, float, bytes]]:
        self.loads.append((chat_pk, after_id))
        return [r for r in self.rows.get(chat_pk, []) if r[0] > after_id][:limit]


async def test_nearest_first_and_incremental_loads() -> None:
    store = Vectors()
    store.rows[1] = [(10, 0.0, vec(1, 0)), (11, 0.0, vec(0, 1)), (12, 0.0, vec(1, 1))]
    index = VectorIndex(store.load, max_bytes=1 << 20)
    query = np.asarray([1.0, 0.1], dtype=np.float32)
    assert await index.nearest(1, query, 2) == [10, 12]
    store.rows[1].append((13, 0.0, vec(1, 0.05)))
    assert await index.nearest(1, query, 5) == [13, 10, 12, 11]
    assert store.loads == [(1, 0), (1, 12)]
    assert await index.nearest(2, query, 5) == []


async def test_memory_is_bounded_by_dropping_the_least_recent_chat() -> None:
    store = Vectors()
    for chat in (1, 2, 3):
        store.rows[chat] = [(chat * 100 + i, float(i), vec(1, i)) for i in range(10)]
    per_chat = 10 * (8 + 8 + 2 * 4)
    index = VectorIndex(store.load, max_bytes=2 * per_chat)
    query = np.asarray([1.0, 0.0], dtype=np.float32)
    for chat in (1, 2, 3):
        await index.nearest(chat, query, 1)
    assert index.nbytes <= 2 * per_chat
    store.loads.clear()
    await index.nearest(1, query, 1)  # dropped earlier: loaded again from the start
    assert store.loads == [(1, 0)]


async def test_the_filter_applies_before_the_nearest_are_taken() -> None:
    """Excluded and out-of-dates vectors never use up one of the k places."""
    store = Vectors()
    store.rows[1] = [
        (1, 100.0, vec(1, 0)),
        (2, 200.0, vec(1, 0.01)),
        (3, 300.0, vec(1, 0.5)),
        (4, 50.0, vec(1, 1)),
    ]
    index = VectorIndex(store.load, max_bytes=1 << 20)
    query = np.asarray([1.0, 0.0], dtype=np.float32)
    assert await index.nearest(1, query, 1) == [1]
    assert await index.nearest(1, query, 1, where=Filter(exclude=frozenset({1, 2}))) == [3]
    assert await index.nearest(1, query, 2, where=Filter(after=60.0, before=300.0)) == [1, 2]
    assert await index.nearest(1, query, 1, where=Filter(after=1000.0)) == []
