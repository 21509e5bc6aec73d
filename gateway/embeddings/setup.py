"""Builds the semantic-recall parts from `Settings.embeddings` (None when it is off)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config import EmbeddingsSettings
from gateway.embeddings.endpoint import VOYAGE_MODEL, VOYAGE_URL, EmbeddingsClient
from gateway.embeddings.index import VectorIndex
from gateway.embeddings.ranker import SemanticRanker
from gateway.embeddings.worker import EmbeddingWorker
from gateway.store.search.recall_store import RecallMethods


@dataclass(frozen=True, slots=True)
class Embeddings:
    client: EmbeddingsClient
    index: VectorIndex
    worker: EmbeddingWorker
    ranker: SemanticRanker

    @property
    def status(self) -> str:
        return (
            f"recall: semantic ranking with {self.client.model} at {self.client.url} "
            f"(vectors {self.client.model_key}), fused with keyword ranking"
        )

    async def close(self) -> None:
        await self.worker.stop()
        await self.client.close()


def embeddings_from(settings: EmbeddingsSettings, store: RecallMethods) -> Embeddings | None:
    if settings.provider == "off":
        return None
    # The settings validator makes base_url and model required for "openai".
    client = EmbeddingsClient(
        provider=settings.provider,
        base_url=str(settings.base_url) if settings.base_url is not None else VOYAGE_URL,
        model=settings.model or VOYAGE_MODEL,
        api_key=settings.api_key.get_secret_value() if settings.api_key is not None else None,
        dimensions=settings.dimensions,
        timeout_s=settings.timeout_s,
    )

    async def load(chat_pk: int, after_id: int, limit: int) -> list[tuple[int, bytes]]:
        return await store.chat_vectors(chat_pk, model=client.model_key, after_id=after_id, limit=limit)

    index = VectorIndex(load, max_bytes=settings.memory_mb * 1024 * 1024)
    return Embeddings(
        client=client,
        index=index,
        worker=EmbeddingWorker(store, client, batch_size=settings.batch_size, backfill=settings.backfill),
        ranker=SemanticRanker(client, index, query_timeout_s=settings.query_timeout_s),
    )
