"""The background worker that embeds stored messages, in batches, after they are committed.

It never sits on a reply's path: the store only wakes it (`notify`), and it reads what is new from the
database, so a restart or a failure loses nothing but time. Where it starts: after the newest message
embedded with this model, or, the first time, after the newest stored message (older history is
embedded only with `backfill`). A failing endpoint is retried with growing pauses and a warning; a
batch the endpoint refuses as such (a 4xx other than auth and rate limits) is skipped with a warning,
and its messages stay searchable by keywords.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from gateway.embeddings.endpoint import EmbeddingsClient
from gateway.errors import EmbeddingsError, StoreError
from gateway.store.search.recall_store import RecallMethods
from gateway.store.search.vectors import NewVector

logger = logging.getLogger(__name__)

IDLE_POLL_S = 30.0
"""With no wake-up, look for new messages this often (e.g. written by another worker process)."""
MAX_PAUSE_S = 300.0


class EmbeddingWorker:
    def __init__(
        self,
        store: RecallMethods,
        client: EmbeddingsClient,
        *,
        batch_size: int = 64,
        backfill: bool = False,
    ) -> None:
        self.store = store
        self.client = client
        self.batch_size = batch_size
        self.backfill = backfill
        self.watermark: int | None = None
        self.failures = 0
        self.embedded = 0
        self.backlog = 0
        """Messages waiting to be embedded, as of the last batch (`/stats`, metrics)."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def notify(self, _role: str = "", _count: int = 0) -> None:
        """New messages were stored (the signature of `Store.on_stored`)."""
        self._wake.set()

    async def run_once(self) -> int:
        """Embed one batch of pending messages; returns how many were embedded (0: none pending).

        Raises EmbeddingsError / StoreError for the caller's retry policy.
        """
        key = self.client.model_key
        if self.watermark is None:
            self.watermark = await self.store.embedding_watermark(key, backfill=self.backfill)
        batch = await self.store.messages_to_embed(after_id=self.watermark, model=key, limit=self.batch_size)
        if not batch:
            self.backlog = 0
            return 0
        try:
            vectors = await self.client.embed([p.text for p in batch], kind="document")
        except EmbeddingsError as exc:
            if not exc.permanent:
                raise
            logger.warning(
                "embeddings endpoint refused messages %d-%d (%s); they stay keyword-searchable only",
                batch[0].message_id,
                batch[-1].message_id,
                exc,
            )
            self.watermark = batch[-1].message_id
            return 0
        await self.store.save_vectors(
            key,
            [
                NewVector(p.message_id, p.chat_pk, v.astype("<f4").tobytes(), int(v.shape[0]))
                for p, v in zip(batch, vectors, strict=True)
            ],
        )
        self.watermark = batch[-1].message_id
        self.embedded += len(batch)
        self.backlog = (
            await self.store.embedding_backlog(after_id=self.watermark)
            if len(batch) == self.batch_size
            else 0
        )
        return len(batch)

    def _pause(self, exc: Exception) -> float:
        self.failures += 1
        pause = min(MAX_PAUSE_S, 2.0**self.failures)
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, float | int):
            pause = max(pause, float(retry_after))
        if self.failures == 1 or self.failures % 10 == 0:
            logger.warning(
                "embedding stored messages failed (%d in a row): %s; retrying in %.0f s",
                self.failures,
                exc,
                pause,
            )
        return pause

    async def run(self) -> None:
        while True:
            # Cleared before looking, so a wake-up that comes while a batch runs is not lost.
            self._wake.clear()
            try:
                done = await self.run_once()
            except (EmbeddingsError, StoreError) as exc:
                await asyncio.sleep(self._pause(exc))
                continue
            except Exception as exc:
                logger.exception("embeddings worker error")
                await asyncio.sleep(self._pause(exc))
                continue
            if self.failures:
                logger.info("embedding works again after %d failure(s)", self.failures)
                self.failures = 0
            if done:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), IDLE_POLL_S)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="embeddings")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.client.close()
