"""Semantic ranking for one recall query: embed the query, find the chat's nearest stored vectors.

A failing or slow endpoint never fails the search: the ranking is left out (keyword ranking alone),
a warning is logged, and the endpoint is not asked again for `cooldown_s`, so a dead endpoint costs
one timeout per cool-down, not one per query.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from gateway.embeddings.endpoint import EmbeddingsClient
from gateway.embeddings.index import VectorIndex
from gateway.errors import EmbeddingsError

logger = logging.getLogger(__name__)

DEPTH = 100
"""Nearest messages handed to the fusion (before date and window filters)."""


class SemanticRanker:
    def __init__(
        self,
        client: EmbeddingsClient,
        index: VectorIndex,
        *,
        query_timeout_s: float = 3.0,
        cooldown_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.index = index
        self.query_timeout_s = query_timeout_s
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._resume_at = 0.0

    async def rank(self, chat_pk: int, query: str, *, depth: int = DEPTH) -> list[int]:
        """Message ids of the chat by similarity to `query`, best first; [] when unavailable."""
        if self._clock() < self._resume_at:
            return []
        try:
            [vector] = await self.client.embed([query], kind="query", timeout_s=self.query_timeout_s)
        except EmbeddingsError as exc:
            self._resume_at = self._clock() + self.cooldown_s
            logger.warning(
                "embeddings endpoint failed for a recall query (%s); keyword ranking only for %.0f s",
                exc,
                self.cooldown_s,
            )
            return []
        return await self.index.nearest(chat_pk, vector, depth)
