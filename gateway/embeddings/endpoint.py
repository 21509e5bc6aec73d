"""An HTTP client for the common `POST /v1/embeddings` protocol: Voyage AI or any OpenAI-style endpoint.

Both take `{"input": [...], "model": ...}` and answer `{"data": [{"index": i, "embedding": [...]}]}`;
Voyage also takes `output_dimension`, OpenAI-style servers `dimensions`. Queries and stored messages
are told apart the way the model was trained to see them: a Voyage-style `input_type` ("query" or
"document") and/or a prefix put before each text (e5: `query: ` / `passage: `). Vectors come back as
unit-length float32 arrays. Every failure (refused, unreachable, too slow, malformed) is raised as
`EmbeddingsError`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

import aiohttp
import numpy as np
import numpy.typing as npt

from gateway.errors import EmbeddingsError

logger = logging.getLogger(__name__)

Provider = Literal["voyage", "openai"]
Kind = Literal["query", "document"]
Vector = npt.NDArray[np.float32]

VOYAGE_URL = "https://api.voyageai.com/v1"
VOYAGE_MODEL = "voyage-4-lite"
MAX_BATCH = 128
"""Texts per request (Voyage accepts up to 1,000 for current models, older ones 128)."""


def unit(values: Sequence[float]) -> Vector:
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        raise EmbeddingsError("the endpoint returned a zero or non-finite vector")
    return vector / norm


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class EmbeddingsClient:
    """Embeds texts with one model; `model_key` names the vectors it makes (model and dimensions)."""

    def __init__(
        self,
        *,
        provider: Provider,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout_s: float = 30.0,
        query_prefix: str = "",
        document_prefix: str = "",
        input_type: bool | None = None,
    ) -> None:
        self.provider = provider
        self.prefixes: dict[Kind, str] = {"query": query_prefix, "document": document_prefix}
        self.input_type = provider == "voyage" if input_type is None else input_type
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.dimensions = dimensions
        self.timeout_s = timeout_s
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._session: aiohttp.ClientSession | None = None

    @property
    def model_key(self) -> str:
        """Names the vectors: another model, size or document prefix makes vectors not comparable."""
        key = f"{self.model}@{self.dimensions or 'default'}"
        prefix = self.prefixes["document"].strip()
        return f"{key}/{prefix}"[:128] if prefix else key

    def _body(self, texts: Sequence[str], kind: Kind) -> dict[str, Any]:
        prefix = self.prefixes[kind]
        body: dict[str, Any] = {"input": [prefix + t for t in texts], "model": self.model}
        if self.input_type:
            body["input_type"] = kind
        if self.provider == "voyage":
            if self.dimensions is not None:
                body["output_dimension"] = self.dimensions
        else:
            body["encoding_format"] = "float"
            if self.dimensions is not None:
                body["dimensions"] = self.dimensions
        return body

    async def embed(
        self, texts: Sequence[str], *, kind: Kind, timeout_s: float | None = None
    ) -> list[Vector]:
        """One unit vector per text, in order."""
        if not texts:
            return []
        if len(texts) > MAX_BATCH:
            raise ValueError(f"at most {MAX_BATCH} texts per request")
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        timeout = aiohttp.ClientTimeout(total=timeout_s or self.timeout_s)
        try:
            async with self._session.post(
                self.url, json=self._body(texts, kind), headers=self._headers, timeout=timeout
            ) as response:
                if response.status >= 400:
                    detail = (await response.text())[:300]
                    raise EmbeddingsError(
                        f"embeddings endpoint answered {response.status}: {detail}",
                        status=response.status,
                        retry_after=_retry_after(response.headers),
                    )
                payload = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise EmbeddingsError(f"embeddings endpoint unreachable: {type(exc).__name__}: {exc}") from exc
        return self._vectors(payload, len(texts))

    def _vectors(self, payload: Any, count: int) -> list[Vector]:
        try:
            items = sorted(payload["data"], key=lambda item: int(item["index"]))
            vectors = [unit(item["embedding"]) for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingsError(f"malformed embeddings response: {exc!r}") from exc
        if len(vectors) != count or len({v.shape for v in vectors}) != 1:
            raise EmbeddingsError(f"expected {count} vectors of one size, got {len(vectors)}")
        return vectors

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
