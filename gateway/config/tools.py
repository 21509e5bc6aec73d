"""`tools`: the Messages API's own server tools, web search and web fetch (`TOOLS__WEB_SEARCH__...`).

The API runs them itself; the gateway only offers them in each reply request. Both are on by default;
`enabled: false` takes a tool out of every request (the tool list changes, so the next request writes
the prompt cache again once).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from gateway.config.sections import Section

WebSearchVersion = Literal["auto", "web_search_20250305", "web_search_20260209", "web_search_20260318"]
WebFetchVersion = Literal[
    "auto", "web_fetch_20250910", "web_fetch_20260209", "web_fetch_20260309", "web_fetch_20260318"
]


class UserLocation(Section):
    """Where results should be local to (`approximate`, as the API takes it)."""

    city: str | None = Field(None, max_length=255)
    region: str | None = Field(None, max_length=255)
    country: str | None = Field(None, min_length=2, max_length=2, description="ISO 3166-1 alpha-2")
    timezone: str | None = Field(None, max_length=255, description="IANA zone, e.g. Europe/Paris")


class _Domains(Section):
    allowed_domains: tuple[str, ...] = Field((), description="only these domains (and subdomains)")
    blocked_domains: tuple[str, ...] = Field((), description="never these domains")

    @model_validator(mode="after")
    def _one_list(self) -> _Domains:
        if self.allowed_domains and self.blocked_domains:
            raise ValueError(f"{self.KEY}: set allowed_domains or blocked_domains, not both")
        return self

    KEY: ClassVar[str] = "tools"


class WebSearchSettings(_Domains):
    KEY: ClassVar[str] = "tools.web_search"
    enabled: bool = True
    max_uses: int = Field(5, ge=1, le=50, description="searches one request may run ($10 per 1,000)")
    user_location: UserLocation | None = None
    version: WebSearchVersion = Field("auto", description="auto: the newest the model takes")


class WebFetchSettings(_Domains):
    KEY: ClassVar[str] = "tools.web_fetch"
    enabled: bool = True
    max_uses: int = Field(5, ge=1, le=50, description="pages one request may fetch (tokens only)")
    max_content_tokens: int | None = Field(
        20_000, ge=1_000, description="a fetched page is cut to this many tokens"
    )
    version: WebFetchVersion = Field("auto", description="auto: the newest the model takes")


class ToolsSettings(Section):
    web_search: WebSearchSettings = WebSearchSettings()
    web_fetch: WebFetchSettings = WebFetchSettings()
