"""Semantic recall's settings: which embeddings endpoint, how texts are marked for it, and how much its
ranking weighs in the fusion (off by default; keyword search works without it).

Many open models were trained with a marker on each text: e5 wants `query: ` / `passage: `, bge a
query instruction, nomic `search_query: ` / `search_document: `; MiniLM and OpenAI's models want
nothing. Servers speaking the OpenAI protocol pass texts through as they are, so the markers are
settings here (`query_prefix`, `document_prefix`); servers that take a Voyage-style `input_type`
(Voyage, some gateways) get it with `input_type=true`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, SecretStr, model_validator


class EmbeddingsSettings(BaseModel):
    """Optional semantic ranking for recall, fused with the keyword ranking."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["off", "voyage", "openai"] = Field(
        "off", description="voyage (Voyage AI) or openai (any /v1/embeddings endpoint)"
    )
    base_url: AnyHttpUrl | None = Field(None, description="API root; default for voyage: its public API")
    api_key: SecretStr | None = None
    model: str | None = Field(None, min_length=1, description="default for voyage: voyage-4-lite")
    dimensions: int | None = Field(None, ge=32, le=4096, description="ask for vectors of this size")
    query_prefix: str = Field("", max_length=200, description="put before a recall query, e.g. 'query: '")
    document_prefix: str = Field(
        "", max_length=200, description="put before a stored message, e.g. 'passage: '"
    )
    input_type: bool | None = Field(
        None, description="send input_type query/document (default: yes for voyage, no for openai)"
    )
    weight: float = Field(
        0.5, ge=0.0, le=4.0, description="the semantic ranking's weight in the fusion (keywords: 1)"
    )
    batch_size: int = Field(64, ge=1, le=128, description="messages per embeddings request")
    timeout_s: float = Field(30.0, gt=0, description="one background embeddings request")
    query_timeout_s: float = Field(
        3.0, gt=0, description="embedding one recall query; slower: that query is ranked by keywords only"
    )
    breaker_failures: int = Field(
        3, ge=1, le=100, description="query failures in a row that pause semantic ranking"
    )
    breaker_cooldown_s: float = Field(
        30.0, gt=0, description="pause before one query tries the endpoint again"
    )
    backfill: bool = Field(False, description="also embed messages stored before embeddings were enabled")
    memory_mb: int = Field(256, ge=1, description="vectors kept in memory per process")

    @model_validator(mode="after")
    def _complete(self) -> EmbeddingsSettings:
        if self.provider == "voyage" and self.api_key is None:
            raise ValueError("embeddings.provider voyage needs embeddings.api_key")
        if self.provider == "openai" and (self.base_url is None or self.model is None):
            raise ValueError("embeddings.provider openai needs embeddings.base_url and embeddings.model")
        return self

    @property
    def sends_input_type(self) -> bool:
        return self.provider == "voyage" if self.input_type is None else self.input_type
