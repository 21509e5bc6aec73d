"""A protocol-level fake of an embeddings API (``server``) and the deterministic embedder behind it
(``model``)."""

from tests.fakes.embeddings.server import FakeEmbeddings

__all__ = ["FakeEmbeddings"]
