"""Per-process vector index: a chat's stored vectors in memory, compared with a query by dot product.

The database keeps the vectors; this index loads a chat's on first use and only the new ones after
that (vectors are never changed in place, only added). Each vector keeps its message's time, so a
search keeps to the query's dates and skips the window's messages before it takes the nearest.
Memory is bounded: the chats used longest ago are dropped first (a single chat larger than the bound
is still kept). Ids of deleted messages may linger until the process restarts; the search drops them
when it reads the rows.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gateway.embeddings.endpoint import Vector

LOAD_BATCH = 5_000
MAX_BLOCKS = 8

LoadFn = Callable[[int, int, int], Awaitable[list[tuple[int, float, bytes]]]]
"""(chat_pk, after message id, limit) -> (message id, POSIX seconds, float32 bytes) in id order."""
Block = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float32]]


@dataclass(frozen=True, slots=True)
class Filter:
    """Which vectors a search may return: within [after, before) (POSIX seconds), not in `exclude`."""

    after: float | None = None
    before: float | None = None
    exclude: frozenset[int] = frozenset()

    def mask(self, ids: npt.NDArray[np.int64], times: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        keep = np.ones(ids.shape[0], dtype=bool)
        if self.after is not None:
            keep &= times >= self.after
        if self.before is not None:
            keep &= times < self.before
        if self.exclude:
            keep &= ~np.isin(ids, np.fromiter(self.exclude, dtype=np.int64, count=len(self.exclude)))
        return keep


@dataclass(slots=True)
class _Chat:
    blocks: list[Block] = field(default_factory=list)
    last_id: int = 0
    nbytes: int = 0

    def add(self, rows: list[tuple[int, float, bytes]], dims: int | None) -> int | None:
        if not rows:
            return dims
        dims = dims or len(rows[0][2]) // 4
        usable = [r for r in rows if len(r[2]) == dims * 4]
        self.last_id = max(self.last_id, rows[-1][0])
        if usable:
            ids = np.fromiter((r[0] for r in usable), dtype=np.int64, count=len(usable))
            times = np.fromiter((r[1] for r in usable), dtype=np.float64, count=len(usable))
            matrix = np.frombuffer(b"".join(r[2] for r in usable), dtype=np.float32).reshape(-1, dims)
            self.blocks.append((ids, times, matrix))
            self.nbytes += ids.nbytes + times.nbytes + matrix.nbytes
        if len(self.blocks) > MAX_BLOCKS:
            self.blocks = [
                (
                    np.concatenate([b[0] for b in self.blocks]),
                    np.concatenate([b[1] for b in self.blocks]),
                    np.concatenate([b[2] for b in self.blocks]),
                )
            ]
        return dims


class VectorIndex:
    def __init__(self, load: LoadFn, *, max_bytes: int) -> None:
        self._load = load
        self._max_bytes = max_bytes
        self._chats: OrderedDict[int, _Chat] = OrderedDict()
        self._dims: int | None = None

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self._chats.values())

    async def _refresh(self, chat_pk: int) -> _Chat:
        chat = self._chats.pop(chat_pk, None) or _Chat()
        self._chats[chat_pk] = chat  # most recently used last
        while True:
            rows = await self._load(chat_pk, chat.last_id, LOAD_BATCH)
            self._dims = chat.add(rows, self._dims)
            if len(rows) < LOAD_BATCH:
                break
        while self.nbytes > self._max_bytes and len(self._chats) > 1:
            self._chats.popitem(last=False)
        return chat

    async def nearest(self, chat_pk: int, query: Vector, k: int, *, where: Filter | None = None) -> list[int]:
        """Message ids of the chat's `k` vectors most similar to `query` among those `where` admits,
        best first."""
        chat = await self._refresh(chat_pk)
        if not chat.blocks or k <= 0 or (self._dims is not None and query.shape[0] != self._dims):
            return []
        ids = np.concatenate([b[0] for b in chat.blocks])
        scores = np.concatenate([b[2] @ query for b in chat.blocks])
        if where is not None:
            keep = where.mask(ids, np.concatenate([b[1] for b in chat.blocks]))
            ids, scores = ids[keep], scores[keep]
        if scores.shape[0] == 0:
            return []
        take = min(k, scores.shape[0])
        top = np.argpartition(-scores, take - 1)[:take]
        order = top[np.argsort(-scores[top], kind="stable")]
        return [int(i) for i in ids[order]]
