"""The embeddings client against the fake endpoint: both protocols, unit vectors, typed failures."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from gateway.embeddings.endpoint import EmbeddingsClient
from gateway.errors import EmbeddingsError
from tests.fakes.embeddings import FakeEmbeddings


@pytest.fixture
async def fake() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings() as server:
        yield server


def client(fake: FakeEmbeddings, **options: object) -> EmbeddingsClient:
    settings: dict[str, object] = {
        "provider": "voyage",
        "base_url": fake.url,
        "model": "voyage-4-lite",
        "api_key": fake.api_key,
        **options,
    }
    return EmbeddingsClient(**settings)  # type: ignore[arg-type]


async def test_voyage_request_and_unit_vectors(fake: FakeEmbeddings) -> None:
    embedder = client(fake, dimensions=512)
    try:
        vectors = await embedder.embed(["a car", "an automobile", "a cat"], kind="document")
    finally:
        await embedder.close()
    [request] = fake.requests
    assert request.authorization == f"Bearer {fake.api_key}"
    assert request.body == {
        "input": ["a car", "an automobile", "a cat"],
        "model": "voyage-4-lite",
        "input_type": "document",
        "output_dimension": 512,
    }
    assert [v.shape for v in vectors] == [(512,)] * 3
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-5 for v in vectors)
    assert float(vectors[0] @ vectors[1]) > 0.99  # synonyms in the fake model
    assert float(vectors[0] @ vectors[2]) < 0.5
    assert embedder.model_key == "voyage-4-lite@512"


async def test_openai_style_request(fake: FakeEmbeddings) -> None:
    embedder = client(fake, provider="openai", model="text-embedding-3-small")
    try:
        [vector] = await embedder.embed(["hello"], kind="query")
    finally:
        await embedder.close()
    assert fake.requests[0].body == {
        "input": ["hello"],
        "model": "text-embedding-3-small",
        "encoding_format": "float",
    }
    assert vector.dtype == np.float32
    assert embedder.model_key == "text-embedding-3-small@default"


async def test_failures_are_typed_with_status_and_permanence(fake: FakeEmbeddings) -> None:
    embedder = client(fake)
    try:
        fake.fail(503)
        with pytest.raises(EmbeddingsError) as unavailable:
            await embedder.embed(["x"], kind="document")
        assert unavailable.value.status == 503
        assert not unavailable.value.permanent
        with pytest.raises(EmbeddingsError) as refused:
            await embedder.embed([""], kind="document")
        assert refused.value.status == 400
        assert refused.value.permanent
        wrong_key = client(fake, api_key="nope")
        with pytest.raises(EmbeddingsError) as denied:
            await wrong_key.embed(["x"], kind="document")
        await wrong_key.close()
        assert denied.value.status == 401
        assert not denied.value.permanent
        fake.delay_s = 2.0
        with pytest.raises(EmbeddingsError, match="unreachable"):
            await embedder.embed(["x"], kind="query", timeout_s=0.2)
    finally:
        await embedder.close()


async def test_an_unreachable_endpoint_is_an_embeddings_error() -> None:
    embedder = EmbeddingsClient(provider="openai", base_url="http://127.0.0.1:9/v1", model="m")
    try:
        with pytest.raises(EmbeddingsError, match="unreachable"):
            await embedder.embed(["x"], kind="document")
    finally:
        await embedder.close()
