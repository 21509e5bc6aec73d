"""The API's own web tools in the fake: web search and web fetch run "by the server" in the call.

A reply request that offers ``web_search`` and whose newest user text says ``search: <query>`` (or
``look up: <query>``) is answered with a ``server_tool_use``, its ``web_search_tool_result`` (results
with opaque ``encrypted_content``) and text whose ``citations`` point at the results; ``usage.
server_tool_use.web_search_requests`` counts the search. ``deep search: <query>`` pauses after the
first search (``stop_reason: "pause_turn"``); sent again with that answer appended, the call goes on
with a second search and the cited text. ``search with the time: <query>`` (with our own ``current_time``
tool offered too) is a mixed turn: the ``server_tool_use`` comes back without its result beside a client
``tool_use`` and ``stop_reason: "tool_use"``; the search runs when the request carrying our
``tool_result`` arrives, its result opening the next answer. ``fetch: <url>`` (with ``web_fetch``
offered) fetches the page.
``WebLookups.next_error`` makes the next lookup fail inside its result block (HTTP 200, not billed).

Later requests are checked as the real API checks them (400 otherwise): every server block and citation
comes back byte-identical to what was issued (cache markers aside), each ``server_tool_use`` with its
result and each result with its call; a tool that sets both ``allowed_domains`` and ``blocked_domains``
is refused (``validation``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.anthropic.replies import new_id
from tests.fakes.anthropic.tokens import output_tokens, text_tokens
from tests.fakes.anthropic.validation import InvalidRequest

SEARCH = re.compile(r"(?:^|\s)(deep search|search|look up):\s*(\S[^\n]*)", re.IGNORECASE)
MIXED = re.compile(r"(?:^|\s)search with the time:\s*(\S[^\n]*)", re.IGNORECASE)
CLIENT_TOOL = "current_time"
FETCH = re.compile(r"(?:^|\s)fetch:\s*(https?://\S+)", re.IGNORECASE)
SERVER_USE = "server_tool_use"
RESULT_TYPES = frozenset({"web_search_tool_result", "web_fetch_tool_result"})
RESULT_TOKENS = 180
"""Input tokens one search result adds to the call (its page content, billed as input)."""
PAGE_TOKENS = 600
"""Input tokens a fetch is billed by default (its page text itself is one short line)."""


def _canonical(block: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True, separators=(",", ":")
    )


def _opaque(*parts: str) -> str:
    return base64.b64encode(hashlib.sha256("\x1f".join(parts).encode()).digest() * 3).decode()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "page"


@dataclass
class Lookup:
    """One answer of the web tools: its content, stop reason and what it bills."""

    content: list[dict[str, Any]]
    stop_reason: str
    searches: int = 0
    fetches: int = 0
    input_tokens: int = 0

    @property
    def output_tokens(self) -> int:
        return output_tokens([b for b in self.content if b.get("type") == "text"]) + 20


@dataclass
class WebLookups:
    """What the fake issued, so later requests can be checked against it."""

    issued: dict[str, str] = field(default_factory=dict)
    """Server block id (the call's id, for its result too) + type -> the canonical block."""
    citations: set[str] = field(default_factory=set)
    next_error: str | None = None
    """The error code the next lookup fails with (``max_uses_exceeded``, ``unavailable``, ...)."""
    searches: int = 0
    page_tokens: int | None = None
    """A fetched page's text at about this many tokens, carried in the result block as a real page is (so
    every later request that sends the block back pays for it); None: one short line, billed as
    `PAGE_TOKENS`."""

    # -- answering -------------------------------------------------------------------------------

    def answer(self, body: Mapping[str, Any], question: str) -> Lookup | None:
        """The web tools' answer to a reply request, or None when it asks for no lookup."""
        tools = {str(t.get("name")): t for t in body.get("tools") or [] if _is_server_tool(t)}
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        waiting = _waiting_uses(messages)
        if waiting and "web_search" in tools:  # a mixed turn: our tool results are in, run its search
            return self._search(
                tools["web_search"], str(waiting[0]["input"]["query"]), final=True, use=waiting[0]
            )
        if last.get("role") == "assistant" and _ends_with_server_block(last):
            match = SEARCH.search(question)
            if match and "web_search" in tools:  # a paused turn sent again: go on
                return self._search(tools["web_search"], match.group(2).strip() + " (more)", final=True)
            return None
        mixed = MIXED.search(question)
        if mixed and "web_search" in tools and _offers_client_tool(body) and not _has_tool_results(last):
            use = self._use("web_search", {"query": mixed.group(1).strip()})
            call = {"type": "tool_use", "id": new_id("toolu"), "name": CLIENT_TOOL, "input": {}}
            return Lookup([use, call], "tool_use")
        match = SEARCH.search(question)
        if match and "web_search" in tools:
            deep = match.group(1).lower() == "deep search"
            return self._search(tools["web_search"], match.group(2).strip(), final=not deep)
        found = FETCH.search(question)
        if found and "web_fetch" in tools:
            return self._fetch(tools["web_fetch"], found.group(1).rstrip(".,)"))
        return None

    def _use(self, name: str, given: dict[str, Any]) -> dict[str, Any]:
        block = {"type": SERVER_USE, "id": new_id("srvtoolu"), "name": name, "input": given}
        self.issued[f"{block['id']}/{SERVER_USE}"] = _canonical(block)
        return block

    def _result(self, block: dict[str, Any]) -> dict[str, Any]:
        self.issued[f"{block['tool_use_id']}/{block['type']}"] = _canonical(block)
        return block

    def _error(self, kind: str, use: dict[str, Any]) -> dict[str, Any] | None:
        if self.next_error is None:
            return None
        code, self.next_error = self.next_error, None
        error_type = "web_search_tool_result_error" if kind == "web_search" else "web_fetch_tool_error"
        return self._result(
            {
                "type": f"{kind}_tool_result",
                "tool_use_id": use["id"],
                "content": {"type": error_type, "error_code": code},
            }
        )

    def _search(
        self, tool: Mapping[str, Any], query: str, *, final: bool, use: Mapping[str, Any] | None = None
    ) -> Lookup:
        """A search and its cited text; given the `use` of a mixed turn's earlier answer, the result
        opens this answer instead (the call is already in the conversation)."""
        ran_earlier = use is not None
        use = dict(use) if use is not None else self._use("web_search", {"query": query})
        failed = self._error("web_search", use)
        if failed is not None:
            text = {"type": "text", "text": f"The search for {query} failed."}
            return Lookup([use, failed, text], "end_turn")
        self.searches += 1
        hosts = _hosts(tool)
        results = [
            {
                "type": "web_search_result",
                "url": f"https://{host}/{_slug(query)}",
                "title": f"{query} - {host}",
                "encrypted_content": _opaque("content", host, query),
                "page_age": "2026-11-30",
            }
            for host in hosts
        ]
        result = self._result(
            {"type": "web_search_tool_result", "tool_use_id": use["id"], "content": results}
        )
        billed = RESULT_TOKENS * len(results)
        if not final:
            return Lookup([use, result], "pause_turn", searches=1, input_tokens=billed)
        cited = [
            self._cite(
                {
                    "type": "web_search_result_location",
                    "url": r["url"],
                    "title": r["title"],
                    "encrypted_index": _opaque("index", r["url"]),
                    "cited_text": f"{query} is described on {r['url']}.",
                }
            )
            for r in results
        ]
        content = [
            *([] if ran_earlier else [use]),
            result,
            {"type": "text", "text": f"Here is what I found about {query}: "},
            {"type": "text", "text": f"{query} is documented on {hosts[0]}", "citations": [cited[0]]},
            {"type": "text", "text": ", and "},
            {"type": "text", "text": f"{hosts[-1]} agrees", "citations": [cited[-1]]},
            {"type": "text", "text": "."},
        ]
        return Lookup(content, "end_turn", searches=1, input_tokens=billed)

    def _fetch(self, tool: Mapping[str, Any], url: str) -> Lookup:
        use = self._use("web_fetch", {"url": url})
        failed = self._error("web_fetch", use)
        if failed is not None:
            return Lookup([use, failed, {"type": "text", "text": f"I could not open {url}."}], "end_turn")
        title = f"Page at {url}"
        page = f"The text of {url}."
        billed = PAGE_TOKENS
        if self.page_tokens is not None:
            words = " ".join(f"line{i} of the page says something" for i in range(self.page_tokens // 10))
            page = f"{page} {words}"
            billed = text_tokens(page)
        result = self._result(
            {
                "type": "web_fetch_tool_result",
                "tool_use_id": use["id"],
                "content": {
                    "type": "web_fetch_result",
                    "url": url,
                    "content": {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": page},
                        "title": title,
                    },
                    "retrieved_at": "2026-12-01T00:00:00Z",
                },
            }
        )
        text = {"type": "text", "text": f"The page {url} says hello."}
        return Lookup([use, result, text], "end_turn", fetches=1, input_tokens=billed)

    def _cite(self, citation: dict[str, Any]) -> dict[str, Any]:
        self.citations.add(_canonical(citation))
        return citation

    # -- checking what comes back ----------------------------------------------------------------

    def check(self, body: Mapping[str, Any]) -> None:
        """Raise `InvalidRequest` (400) for a server block or citation sent back altered, unknown or
        unpaired."""
        messages = list(body.get("messages") or [])
        uses: dict[str, str] = {}
        results: dict[str, str] = {}
        for i, message in enumerate(messages):
            content = message.get("content")
            for j, block in enumerate(content if isinstance(content, list) else []):
                where = f"messages.{i}.content.{j}"
                kind = block.get("type")
                if kind == SERVER_USE or kind in RESULT_TYPES:
                    ident = str(block.get("id") if kind == SERVER_USE else block.get("tool_use_id"))
                    if self.issued.get(f"{ident}/{kind}") != _canonical(block):
                        raise InvalidRequest(
                            f"{where}: `{kind}` blocks must be sent back exactly as the API returned them"
                        )
                    (uses if kind == SERVER_USE else results)[ident] = where
                elif kind == "text":
                    for citation in block.get("citations") or []:
                        if _canonical(citation) not in self.citations:
                            raise InvalidRequest(f"{where}.citations: Invalid `encrypted_index` in citation")
        last = messages[-1] if messages else {}
        pending = {str(b.get("id")) for b in _waiting_uses(messages)}
        if last.get("role") == "assistant":
            content = last.get("content")
            pending |= {
                str(b.get("id"))
                for b in content or []
                if isinstance(b, Mapping) and b.get("type") == SERVER_USE
            }
        for ident, where in uses.items():
            if ident not in results and ident not in pending:
                raise InvalidRequest(
                    f"{where}: `server_tool_use` ids were found without a corresponding result block: {ident}"
                )
        for ident, where in results.items():
            if ident not in uses:
                raise InvalidRequest(f"{where}: result block without a preceding `server_tool_use`: {ident}")


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _has_tool_results(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "user" and any(b.get("type") == "tool_result" for b in _blocks(message))


def _waiting_uses(messages: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The server calls of a mixed turn that wait for our tool results: in the assistant message just
    before a final user message of tool results, with no result anywhere yet."""
    if len(messages) < 2 or not _has_tool_results(messages[-1]) or messages[-2].get("role") != "assistant":
        return []
    answered = {
        str(b.get("tool_use_id")) for m in messages for b in _blocks(m) if b.get("type") in RESULT_TYPES
    }
    return [
        b for b in _blocks(messages[-2]) if b.get("type") == SERVER_USE and str(b.get("id")) not in answered
    ]


def _offers_client_tool(body: Mapping[str, Any]) -> bool:
    return any(t.get("name") == CLIENT_TOOL and not _is_server_tool(t) for t in body.get("tools") or [])


def _is_server_tool(tool: Mapping[str, Any]) -> bool:
    return str(tool.get("type", "")).startswith(("web_search_", "web_fetch_"))


def _ends_with_server_block(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    return bool(blocks) and (blocks[-1].get("type") == SERVER_USE or blocks[-1].get("type") in RESULT_TYPES)


def ends_paused(message: Mapping[str, Any]) -> bool:
    """An assistant message a paused turn ends with (its last block a server block): the next message
    may be the assistant's continuation."""
    return message.get("role") == "assistant" and _ends_with_server_block(message)


def _hosts(tool: Mapping[str, Any]) -> list[str]:
    allowed = [str(d) for d in tool.get("allowed_domains") or []]
    if allowed:
        return allowed[:2]
    blocked = {str(d) for d in tool.get("blocked_domains") or []}
    return [h for h in ("docs.example.com", "wiki.example.org", "news.example.net") if h not in blocked][:2]
