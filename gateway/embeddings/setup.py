"""Builds the semantic-recall parts from `Settings.embeddings` (None when it is off)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config import EmbeddingsSettings
from gateway.embeddings.breaker import Breaker, BreakerState
from gateway.embeddings.endpoint import VOYAGE_MODEL, VOYAGE_URL, EmbeddingsClient
from gateway.embeddings.index import VectorIndex
from gateway.embeddings.ranker import OUTCOMES, SemanticRanker
from gateway.embeddings.worker import EmbeddingWorker
from gateway.store.search.recall_store import RecallMethods


@dataclass(frozen=True, slots=True)
class Embeddings:
    client: EmbeddingsClient
    index: VectorIndex
    worker: EmbeddingWorker
    ranker: SemanticRanker

    def gauges(self) -> tuple[bool, int, dict[str, int]]:
        """(breaker open, messages waiting to be embedded, recall queries by outcome) for metrics."""
        counts = self.ranker.outcomes
        open_ = self.ranker.breaker.state is BreakerState.OPEN
        return open_, self.worker.backlog, {outcome: counts[outcome] for outcome in OUTCOMES}

    def report(self) -> str:
        """The `/stats` line: whether queries get a semantic side, and what is not embedded yet."""
        breaker = self.ranker.breaker
        state = breaker.state
        if state is BreakerState.CLOSED:
            head = f"on ({self.client.model})"
        elif state is BreakerState.OPEN:
            head = (
                f"paused after {breaker.failures} failed queries in a row, "
                f"retrying in {breaker.reopens_in:.0f} s ({self.client.model})"
            )
        else:
            head = f"retrying the endpoint with the next query ({self.client.model})"
        counts = self.ranker.outcomes
        queries = (
            f"queries: {counts['ranked']:,} ranked, {counts['timeout']:,} timed out, "
            f"{counts['error']:,} failed, {counts['skipped']:,} skipped while paused"
        )
        return f"{head}; {self.worker.backlog:,} messages waiting to be embedded; {queries}"

    @property
    def status(self) -> str:
        return (
            f"recall: semantic ranking with {self.client.model} at {self.client.url} "
            f"(vectors {self.client.model_key}), fused with keyword ranking"
        )

    async def close(self) -> None:
        await self.worker.stop()
        await self.client.close()


def client_from(settings: EmbeddingsSettings) -> EmbeddingsClient:
    """The endpoint client `settings` describe (provider not "off")."""
    if settings.provider == "off":
        raise ValueError("embeddings are off")
    # The settings validator makes base_url and model required for "openai".
    return EmbeddingsClient(
        provider=settings.provider,
        base_url=str(settings.base_url) if settings.base_url is not None else VOYAGE_URL,
        model=settings.model or VOYAGE_MODEL,
        api_key=settings.api_key.get_secret_value() if settings.api_key is not None else None,
        dimensions=settings.dimensions,
        timeout_s=settings.timeout_s,
        query_prefix=settings.query_prefix,
        document_prefix=settings.document_prefix,
        input_type=settings.sends_input_type,
    )


def embeddings_from(settings: EmbeddingsSettings, store: RecallMethods) -> Embeddings | None:
    if settings.provider == "off":
        return None
    client = client_from(settings)

    async def load(chat_pk: int, after_id: int, limit: int) -> list[tuple[int, float, bytes]]:
        return await store.chat_vectors(chat_pk, model=client.model_key, after_id=after_id, limit=limit)

    index = VectorIndex(load, max_bytes=settings.memory_mb * 1024 * 1024)
    worker = EmbeddingWorker(store, client, batch_size=settings.batch_size, backfill=settings.backfill)
    ranker = SemanticRanker(
        client,
        index,
        store,
        watermark=lambda: worker.watermark,
        weight=settings.weight,
        query_timeout_s=settings.query_timeout_s,
        breaker=Breaker(failures=settings.breaker_failures, cooldown_s=settings.breaker_cooldown_s),
    )
    return Embeddings(client=client, index=index, worker=worker, ranker=ranker)
