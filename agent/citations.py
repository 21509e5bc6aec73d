"""What a reply that looked things up on the web shows: its text, then a short "Sources" line (pure).

The API splits a cited answer into text blocks, each cited span its own block with `citations` naming
the search result (`url`, `title`) it rests on. The reply is those blocks joined back as written, then
one line of links in the chat's markdown (`[title](url)`), which each platform's adapter renders as it
renders any link: Telegram HTML `<a href>`, a Discord masked link, the console's link text. A lookup
that failed (the error comes inside the result block, HTTP 200) is told in plain words when the model
wrote nothing about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from agent.server_blocks import RESULT_TYPES
from agent.types import Block

MAX_SOURCES: Final = 5
"""Links on the Sources line (the most cited first, then in order of first citation)."""
TITLE_CHARS: Final = 80

LOOKUP_ERRORS: Final = {
    "max_uses_exceeded": "the web lookups allowed for one answer were used up",
    "too_many_requests": "the web search service was busy",
    "unavailable": "the web search service was unavailable",
    "query_too_long": "the search query was too long",
    "invalid_tool_input": "the lookup was malformed",
    "request_too_large": "the lookup was too large",
    "url_too_long": "the address was too long",
    "url_not_allowed": "that site is not allowed by this bot's settings",
    "url_not_in_prior_context": "only addresses given in the chat or found by a search can be opened",
    "url_not_accessible": "the page could not be reached",
    "unsupported_content_type": "the page's content type cannot be read",
}


@dataclass(frozen=True, slots=True)
class Source:
    url: str
    title: str


def reply_text(content: Iterable[Block]) -> str:
    """The text blocks of a response: consecutive ones joined as written (a cited answer is split at
    each citation), those separated by other blocks (a tool call, a search) by a blank line."""
    parts: list[str] = []
    current: list[str] = []
    for block in content:
        if block.get("type") == "text":
            current.append(str(block.get("text", "")))
        elif current:
            parts.append("".join(current))
            current = []
    if current:
        parts.append("".join(current))
    return "\n\n".join(p.strip() for p in parts if p.strip())


def sources(content: Iterable[Block]) -> list[Source]:
    """The pages the text cites, most cited first (ties: first cited first), one per URL."""
    counts: dict[str, int] = {}
    titles: dict[str, str] = {}
    for block in content:
        if block.get("type") != "text":
            continue
        for citation in block.get("citations") or []:
            url = str(citation.get("url") or "")
            if not url.startswith(("http://", "https://")):
                continue
            counts[url] = counts.get(url, 0) + 1
            titles.setdefault(url, str(citation.get("title") or citation.get("document_title") or ""))
    ranked = sorted(counts, key=lambda u: -counts[u])  # stable: first cited wins a tie
    return [Source(u, titles[u]) for u in ranked[:MAX_SOURCES]]


def lookup_errors(content: Iterable[Block]) -> list[str]:
    """Each failed lookup's error in plain words (one per distinct error)."""
    found: dict[str, None] = {}
    for block in content:
        if block.get("type") not in RESULT_TYPES:
            continue
        inner = block.get("content")
        if isinstance(inner, dict) and inner.get("error_code"):
            code = str(inner["error_code"])
            found.setdefault(LOOKUP_ERRORS.get(code, f"the lookup failed ({code})"), None)
    return list(found)


def _label(source: Source) -> str:
    title = " ".join(source.title.replace("[", "(").replace("]", ")").split()) or source.url
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def sources_line(found: Sequence[Source]) -> str:
    """`Sources: [title](url), ...` ("" when nothing was cited)."""
    if not found:
        return ""
    return "Sources: " + ", ".join(f"[{_label(s)}]({s.url.replace(')', '%29')})" for s in found)


def with_sources(text: str, content: Sequence[Block]) -> str:
    """The reply: `text`, a word on failed lookups when the text is empty, and the Sources line."""
    errors = lookup_errors(content)
    if not text.strip() and errors:
        text = "I could not look that up: " + "; ".join(errors) + "."
    line = sources_line(sources(content))
    return f"{text.rstrip()}\n\n{line}" if line and text.strip() else (text or line)
