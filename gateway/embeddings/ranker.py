"""Semantic ranking for one recall query: embed the query, rank the chat's in-scope stored vectors.

The semantic side keeps to the same scope as the keyword side (dates, not the window's messages) before
it takes its nearest `depth`, so a message the model already sees never takes a rank position. A slow
or failing endpoint costs only the query that met it: that query is ranked by keywords alone (its own
deadline, `query_timeout_s`), and only several failures in a row open the breaker, which lets one
query try again after a cool-down. The result also says how many in-scope messages are not embedded
yet, so the reader knows the semantic side saw a partial index. Questions people asked the bot before
rank after the other similar messages: worded like the query, they are nearest, but hold no answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from gateway.embeddings.breaker import Breaker, BreakerState
from gateway.embeddings.endpoint import EmbeddingsClient, Vector
from gateway.embeddings.index import Filter, VectorIndex
from gateway.errors import EmbeddingsError, StoreError
from gateway.store.search.recall_store import RecallMethods
from gateway.store.search.scope import Scope

logger = logging.getLogger(__name__)

DEPTH = 100
"""Nearest in-scope messages handed to the fusion."""

Outcome = Literal["ranked", "timeout", "error", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("ranked", "timeout", "error", "skipped")
"""ranked: the semantic side took part; timeout / error: the endpoint failed this query; skipped: the
breaker was open, so the query did not ask."""


@dataclass(frozen=True, slots=True)
class SemanticRanking:
    ids: list[int] = field(default_factory=list)
    """In-scope message ids, most similar first (empty when the semantic side sat out)."""
    weight: float = 0.0
    """The list's weight in the fusion (the keyword lists weigh 1)."""
    unindexed: int = 0
    """In-scope messages not embedded yet."""
    outcome: Outcome = "skipped"


class SemanticRanker:
    def __init__(
        self,
        client: EmbeddingsClient,
        index: VectorIndex,
        store: RecallMethods,
        *,
        watermark: Callable[[], int | None],
        weight: float = 0.5,
        query_timeout_s: float = 3.0,
        breaker: Breaker | None = None,
    ) -> None:
        self.client = client
        self.index = index
        self.store = store
        self.watermark = watermark
        """Where the embedding worker stands: messages after it are not embedded yet."""
        self.weight = weight
        self.query_timeout_s = query_timeout_s
        self.breaker = breaker or Breaker()
        self.outcomes: Counter[Outcome] = Counter()

    async def _unindexed(self, scope: Scope) -> int:
        mark = self.watermark()
        if mark is None:
            return 0
        try:
            return await self.store.embedding_backlog(after_id=mark, scope=scope)
        except StoreError as exc:
            logger.warning("could not count the chat's messages not yet embedded: %s", exc)
            return 0

    async def _embed_query(self, query: str) -> tuple[Outcome, EmbeddingsError | None, Vector | None]:
        try:
            async with asyncio.timeout(self.query_timeout_s):
                [vector] = await self.client.embed([query], kind="query", timeout_s=self.query_timeout_s)
        except TimeoutError:
            return "timeout", EmbeddingsError(f"no answer within {self.query_timeout_s:g} s"), None
        except EmbeddingsError as exc:
            return ("timeout" if isinstance(exc.__cause__, TimeoutError) else "error"), exc, None
        return "ranked", None, vector

    async def rank(self, scope: Scope, query: str, *, depth: int = DEPTH) -> SemanticRanking:
        """The chat's in-scope messages by similarity to `query`, and how many are not embedded yet."""
        unindexed = await self._unindexed(scope)
        if not self.breaker.allow():
            self.outcomes["skipped"] += 1
            return SemanticRanking(unindexed=unindexed, outcome="skipped")
        trial = self.breaker.state is BreakerState.HALF_OPEN
        outcome, error, vector = await self._embed_query(query)
        self.outcomes[outcome] += 1
        if vector is None:
            if self.breaker.failed():
                logger.warning(
                    "embeddings endpoint failed for %d recall queries in a row (%s); semantic ranking "
                    "paused for %.0f s",
                    self.breaker.failures,
                    error,
                    self.breaker.cooldown_s,
                )
            else:
                logger.warning(
                    "embeddings endpoint failed for a recall query (%s); keywords only for it", error
                )
            return SemanticRanking(unindexed=unindexed, outcome=outcome)
        if trial:
            logger.info("embeddings endpoint answers again; semantic ranking resumed")
        self.breaker.succeeded()
        ids = await nearest_in_scope(self.index, self.store, scope, vector, depth)
        return SemanticRanking(ids=ids, weight=self.weight, unindexed=unindexed, outcome="ranked")


async def nearest_in_scope(
    index: VectorIndex, store: RecallMethods, scope: Scope, vector: Vector, depth: int = DEPTH
) -> list[int]:
    """The `depth` in-scope messages nearest to `vector`, questions asked of the bot last."""
    candidates = await store.recall_candidates(scope)
    where = Filter(
        after=scope.after.timestamp() if scope.after is not None else None,
        before=scope.before.timestamp() if scope.before is not None else None,
        exclude=candidates.window,
    )
    ids = await index.nearest(scope.chat_pk, vector, depth, where=where)
    # An earlier question to the bot is worded like the query, so it is nearest, but it holds no
    # answer: such questions go after the messages that may.
    asked = await store.questions_to_bot(ids)
    return [i for i in ids if i not in asked] + [i for i in ids if i in asked]
