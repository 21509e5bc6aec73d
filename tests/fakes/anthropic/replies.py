"""What the fake Anthropic API answers: scripted replies and faults, else a deterministic default.

Default replies: a summary request (the newest user text carries the compactor's template headings and the
request offers no tools) gets a well-formed structured summary naming identifiers found in the conversation;
anything else gets ``"echo: <newest user text>"`` (truncated), so tests can see which message was answered.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.fakes.anthropic.tokens import BYTES_PER_TOKEN, truncate_to_tokens

Scope = Literal["any", "reply", "summary"]
FaultKind = Literal["rate_limit", "overloaded", "server_error", "timeout", "reset", "overflow", "auth", "cut"]
FAULT_KINDS: frozenset[str] = frozenset(
    {"rate_limit", "overloaded", "server_error", "timeout", "reset", "overflow", "auth", "cut"}
)
SummaryDetector = Callable[[Mapping[str, Any]], bool]

_ids = itertools.count(1)
_TAGGED_ONLY = re.compile(r"^\s*<([A-Za-z][\w-]*)[^>]*>.*</\1>\s*$", re.DOTALL)
_GOAL_HEADING = re.compile(r"^#{1,6}\s*Goal\b", re.MULTILINE)
_IDENTIFIER = re.compile(
    r"(?<![\w/.-])(?:"
    r"[\w.-]*/[\w./-]*\w"  # paths: src/app.py, tests/test_api.py
    r"|[\w-]+\.(?:py|md|json|toml|ya?ml|txt|sql|sh|js|ts|go|rs|cfg|ini|csv|html)"  # file names
    r"|[A-Za-z_][\w-]*\d[\w-]*"  # anything with a digit: ORDER-1234, v2, build_42
    r"|[A-Za-z]+_[\w]+"  # snake_case
    r"|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*"  # camelCase and CamelCase
    r")(?![\w/-])"
)
SUMMARY_HEADINGS = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Key Decisions",
    "Relevant Files",
    "Next Steps",
    "Critical Context",
)


def new_id(prefix: str) -> str:
    return f"{prefix}_fake{next(_ids):08d}"


REFUSAL_CATEGORIES = ("cyber", "bio", "frontier_llm", "reasoning_extraction", "general_harms")


@dataclass(frozen=True, slots=True)
class Refusal:
    """A refusal by the API's safety classifiers: HTTP 200, ``stop_reason: "refusal"`` and these
    ``stop_details`` (``category`` may be None when the refusal maps to no named category)."""

    category: str | None = "general_harms"
    explanation: str | None = "This request was declined by the model's safety classifiers."

    def __post_init__(self) -> None:
        if self.category is not None and self.category not in REFUSAL_CATEGORIES:
            raise ValueError(f"unknown refusal category {self.category!r}; known: {REFUSAL_CATEGORIES}")

    def stop_details(self) -> dict[str, Any]:
        return {"type": "refusal", "category": self.category, "explanation": self.explanation}


@dataclass(slots=True)
class ScriptedReply:
    """One queued answer: text and/or tool calls; ``scope`` says which calls may consume it.

    On models with preserved thinking also: ``thinking`` (the summarized reasoning text), ``thinking_tokens``
    (the hidden reasoning's size), ``progress`` (text the model writes before its tool calls, returned as a
    thinking block) and ``thinking_only`` (the reasoning used the whole ``max_tokens``). On any model,
    ``refusal`` makes the answer a refusal whose content is ``text`` as partial output (or nothing).
    ``within``: only a call whose first message contains this text takes it (several chats at once).
    ``hold``: the answer waits until the event is set."""

    text: str | None = None
    tool_uses: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    delay: float = 0.0
    scope: Scope = "reply"
    thinking: str | None = None
    thinking_tokens: int | None = None
    progress: str | None = None
    refusal: Refusal | None = None
    thinking_only: bool = False
    within: str | None = None
    hold: asyncio.Event | None = None

    def fits(self, body: Mapping[str, Any]) -> bool:
        if self.within is None:
            return True
        messages = body.get("messages") or []
        return bool(messages) and any(self.within in text for text in _text_blocks(messages[0]))

    def content(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if self.text:
            blocks.append({"type": "text", "text": self.text})
        for call in self.tool_uses:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": str(call.get("id") or new_id("toolu")),
                    "name": str(call["name"]),
                    "input": dict(call.get("input") or {}),
                }
            )
        return blocks

    def resolved_stop_reason(self) -> str:
        return self.stop_reason or ("tool_use" if self.tool_uses else "end_turn")


@dataclass(slots=True)
class Fault:
    """A scripted failure; ``times=-1`` lasts until cleared. ``delay`` is how long a timeout holds on.
    ``cut`` drops the connection halfway through a streamed answer's text (a plain call: before the answer,
    as ``reset``)."""

    kind: FaultKind
    times: int = 1
    retry_after: float | None = None
    delay: float = 10.0
    scope: Scope = "any"

    def applies_to(self, kind: str) -> bool:
        return self.times != 0 and self.scope in ("any", kind)


def scope_matches(scope: Scope, kind: str) -> bool:
    return scope in ("any", kind)


def _text_blocks(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or [] if b.get("type") == "text"]


def _tool_result_texts(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if block.get("type") != "tool_result":
            continue
        inner = block.get("content", "")
        if isinstance(inner, str):
            texts.append(inner)
        else:
            texts.extend(str(b.get("text", "")) for b in inner or [] if b.get("type") == "text")
    return texts


_MEDIA_LABEL = re.compile(r"\[(?:photo|image|sticker|PDF) (m\d+)[^\]\n]*\]")
_QUOTED = re.compile(r"^<(conversation|previous_summary)>$(.*?)^</\1>$", re.DOTALL | re.MULTILINE)
"""A section the summarizer's instructions quote, each tag on a line of its own."""


def newest_user_text(body: Mapping[str, Any]) -> str:
    """Text of the newest user message, leaving out blocks that are a single tagged metadata element."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        texts = [t for t in _text_blocks(message) if not _TAGGED_ONLY.match(t)]
        if not texts:
            texts = _text_blocks(message) or _tool_result_texts(message)
        return "\n".join(texts)
    return ""


def is_summary_request(body: Mapping[str, Any]) -> bool:
    """The default detector: no tools offered and the newest user text has a ``## Goal`` heading."""
    return not body.get("tools") and bool(_GOAL_HEADING.search(newest_user_text(body)))


def echo_reply(body: Mapping[str, Any], *, limit: int) -> str:
    text = " ".join(newest_user_text(body).split())
    if len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return f"echo: {text}"


def _all_texts(body: Mapping[str, Any]) -> Iterable[str]:
    system = body.get("system")
    if isinstance(system, str):
        yield system
    elif isinstance(system, list):
        yield from (str(b.get("text", "")) for b in system)
    for message in body.get("messages") or []:
        yield from _text_blocks(message)
        yield from _tool_result_texts(message)
        yield from _compaction_texts(message)


def _compaction_texts(message: Mapping[str, Any]) -> list[str]:
    """Summaries carried by server-side compaction blocks (what a later summary must keep)."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [str(b["content"]) for b in blocks if b.get("type") == "compaction" and b.get("content")]


def conversation_identifiers(body: Mapping[str, Any]) -> list[str]:
    """Identifiers (paths, file names, ids with digits, snake/camel case) in order of first appearance."""
    seen: dict[str, None] = {}
    for text in _all_texts(body):
        for match in _IDENTIFIER.finditer(text):
            seen.setdefault(match.group(0).strip(".-"), None)
    return [name for name in seen if name]


def _render_summary(goal: str, files: list[str], others: list[str]) -> str:
    def bullets(items: list[str], empty: str) -> str:
        return "\n".join(f"- {item}" for item in items) if items else f"- {empty}"

    return (
        f"## Goal\n{goal}\n\n"
        "## Constraints & Preferences\n- Keep the conversation's stated preferences.\n\n"
        "## Progress\n### Done\n- Earlier turns were reviewed and condensed.\n"
        "### In Progress\n- Continuing the latest request.\n### Blocked\n- None.\n\n"
        "## Key Decisions\n- None recorded beyond the context below.\n\n"
        f"## Relevant Files\n{bullets(files, 'None.')}\n\n"
        "## Next Steps\n- Answer the newest message.\n\n"
        f"## Critical Context\n{bullets(others, 'None.')}\n"
    )


def _instructions(body: Mapping[str, Any]) -> str | None:
    """The summarizer's instructions: the newest user message's last text block, when it carries the
    template's ``Goal`` heading."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            texts = _text_blocks(message)
            return texts[-1] if texts and _GOAL_HEADING.search(texts[-1]) else None
    return None


def media_labels(body: Mapping[str, Any]) -> list[str]:
    """Ids of the images/PDFs labelled in the conversation ([photo m12], [PDF m3: ...]), first seen first.
    Of the summarizer's instructions only what they quote counts: their examples name no media of the
    chat."""
    instructions = _instructions(body)
    seen: dict[str, None] = {}
    for text in _all_texts(body):
        if text == instructions:
            text = "\n".join(m.group(2) for m in _QUOTED.finditer(text))
        for match in _MEDIA_LABEL.finditer(text):
            seen.setdefault(match.group(1), None)
    return list(seen)


def summary_reply(body: Mapping[str, Any], *, max_tokens: int) -> str:
    """A structured summary naming the conversation's images and PDFs by id (as the prompt asks) and its
    identifiers (earliest first), within ``max_tokens``."""
    names = [n for n in conversation_identifiers(body) if n not in SUMMARY_HEADINGS]
    goal = "Continue the conversation with everything above preserved."
    budget = int(max_tokens * BYTES_PER_TOKEN) - len(_render_summary(goal, [], []).encode("utf-8"))
    files: list[str] = []
    others: list[str] = [f"[image {m}: a picture shared in the chat]" for m in media_labels(body)]
    budget -= sum(len(o) + 3 for o in others)
    for name in names:
        cost = len(name.encode("utf-8")) + 3
        if cost > budget:
            break
        budget -= cost
        (files if "/" in name or re.search(r"\.[a-z]{1,5}$", name) else others).append(name)
    return truncate_to_tokens(_render_summary(goal, files, others), max_tokens)
