"""Per-process vector index: a chat's stored vectors in memory, compared with a query by dot product.

The database keeps the vectors; this index loads a chat's on first use and only the new ones after
that (vectors are never changed in place, only added). Memory is bounded: the chats used longest ago
are dropped first (a single chat larger than the bound is still kept). Ids of deleted messages may
linger until the process restarts; the search drops them when it reads the rows.
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

LoadFn = Callable[[int, int, int], Awaitable[list[tuple[int, bytes]]]]
"""(chat_pk, after message id, limit) -> (message id, float32 bytes) in id order."""


@dataclass(slots=True)
class _Chat:
    blocks: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = field(default_factory=list)
    last_id: int = 0
    nbytes: int = 0

    def add(self, rows: list[tuple[int, bytes]], dims: int | None) -> int | None:
        if not rows:
            return dims
        dims = dims or len(rows[0][1]) // 4
        usable = [(i, v) for i, v in rows if len(v) == dims * 4]
        self.last_id = max(self.last_id, rows[-1][0])
        if usable:
            ids = np.fromiter((i for i, _ in usable), dtype=np.int64, count=len(usable))
            matrix = np.frombuffer(b"".join(v for _, v in usable), dtype=np.float32).reshape(-1, dims)
            self.blocks.append((ids, matrix))
            self.nbytes += ids.nbytes + matrix.nbytes
        if len(self.blocks) > MAX_BLOCKS:
            self.blocks = [
                (np.concatenate([b[0] for b in self.blocks]), np.concatenate([b[1] for b in self.blocks]))
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

    async def nearest(self, chat_pk: int, query: Vector, k: int) -> list[int]:
        """Message ids of the chat's `k` vectors most similar to `query`, best first."""
        chat = await self._refresh(chat_pk)
        if not chat.blocks or k <= 0 or (self._dims is not None and query.shape[0] != self._dims):
            return []
        ids = np.concatenate([b[0] for b in chat.blocks])
        scores = np.concatenate([b[1] @ query for b in chat.blocks])
        take = min(k, scores.shape[0])
        top = np.argpartition(-scores, take - 1)[:take]
        order = top[np.argsort(-scores[top], kind="stable")]
        return [int(i) for i in ids[order]]
