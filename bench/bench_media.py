"""One day of a private chat with 50 photos among 400 messages, under three ways of handling images.

Run: `python -m bench.bench_media`. The same seeded trace (200 user messages, 50 of them photos,
each answered: 400 stored messages) is replayed through the real gateway in simulated time against
the fake Anthropic API, which counts images by their pixels and models the prefix cache:

    ours    the project: images are stored once and referenced; requests carry each image once, the
            same bytes every turn; old images stop travelling together when it pays
            (`agent.media_aging`), compaction names them in the summary, and `view_media` fetches
            any of them again
    keep    "keep every image" (one peer approach): images stay in every request; nothing compacts
    strip   "strip every image after N turns" (the other, N = 5): images older than the last N user
            turns are replaced by a placeholder in each request; compaction as ours

Reported: input cost per turn (uncached input, cache writes and reads, summary calls included, USD at
the model table's prices), the largest request (prompt tokens), compactions, and how many of the 50
photos the model can still see (in the last request) or fetch (named, stored and reachable through
`view_media`) at the end. Targets: ours keeps all 50 fetchable, at a cost per turn at or below the
cheaper peer policy.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.llm import AnthropicClient, LLMClient, LLMRequest, LLMResponse
from agent.types import Block, Message
from bench.databases import DEFAULT_POSTGRES_URL, fresh_database
from bench.oracle import SentRequest, billed_input_usd
from bench.replay import API_KEY, SimClock, bench_settings, require_all_answered
from gateway.app.gateway import Gateway
from gateway.platforms.base import Attachment
from gateway.store import Store
from tests.fakes.anthropic import FakeAnthropic
from tests.support.media_files import image_bytes
from tests.support.memory_adapter import DirectMemoryAdapter, chat_ref, incoming

USER_MESSAGES = 200
PHOTOS = 50
STRIP_AFTER_TURNS = 5
MINUTE = 60.0
_WORDS = [
    "shelf",
    "garden",
    "kitchen",
    "receipt",
    "invoice",
    "error",
    "dialog",
    "screen",
    "chart",
    "kids",
    "dog",
    "trip",
    "train",
    "ticket",
    "menu",
    "price",
    "broken",
    "fixed",
    "paint",
    "wall",
    "colour",
    "window",
    "light",
    "plan",
    "budget",
    "meeting",
    "notes",
    "list",
    "groceries",
]


@dataclass(frozen=True, slots=True)
class TraceMessage:
    at: float
    text: str
    photo: int | None
    """Index of the photo sent with the message, if any."""


def trace(seed: int = 7) -> list[TraceMessage]:
    """A day of bursts: 3-10 messages a minute or so apart, then a 10-90 minute break; photos spread."""
    rng = random.Random(seed)
    photo_slots = set(rng.sample(range(USER_MESSAGES), PHOTOS))
    out: list[TraceMessage] = []
    t = 8 * 3600.0
    photo = 0
    while len(out) < USER_MESSAGES:
        for _ in range(rng.randint(3, 10)):
            if len(out) >= USER_MESSAGES:
                break
            words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 40)))
            has_photo = len(out) in photo_slots
            out.append(TraceMessage(t, words, photo if has_photo else None))
            photo += has_photo
            t += rng.uniform(0.3, 3.0) * MINUTE
        t += rng.uniform(5.0, 45.0) * MINUTE
    return out


class StripOldImages:
    """The "strip after N turns" peers: image blocks outside the last N user turns become a placeholder."""

    def __init__(self, inner: LLMClient, *, turns: int) -> None:
        self.inner = inner
        self.turns = turns

    async def create(self, request: LLMRequest) -> LLMResponse:
        user_turns = [i for i, m in enumerate(request.messages) if m["role"] == "user" and _is_turn(m)]
        keep_from = user_turns[-self.turns] if len(user_turns) >= self.turns else 0
        messages = [m if i >= keep_from else _strip(m) for i, m in enumerate(request.messages)]
        return await self.inner.create(dataclasses.replace(request, messages=messages))


def _is_turn(message: Message) -> bool:
    content = message["content"]
    return isinstance(content, str) or not all(b.get("type") == "tool_result" for b in content)


def _strip(message: Message) -> Message:
    content = message["content"]
    if isinstance(content, str) or not any(b.get("type") == "image" for b in content):
        return message
    blocks: list[Block] = [
        {"type": "text", "text": "[image removed]"} if b.get("type") == "image" else b for b in content
    ]
    return {"role": message["role"], "content": blocks}


@dataclass(frozen=True, slots=True)
class Outcome:
    policy: str
    cost_per_turn: float
    total_cost: float
    largest_request: int
    compactions: int
    visible: int
    fetchable: int
    turns: int
    wall_s: float


POLICIES: dict[str, dict[str, Any]] = {
    "ours": {},
    "keep": {"compression": {"enabled": False}},
    "strip": {},
}


async def run_policy(policy: str, messages: Sequence[TraceMessage], database_url: str) -> Outcome:
    clock = SimClock()
    started = time.perf_counter()
    photos = [image_bytes(1280, 960, seed=i) for i in range(PHOTOS)]
    async with FakeAnthropic(api_key=API_KEY, clock=lambda: 0.0, echo_limit=300) as fake:
        overrides = {"scheduler": {"enabled": False}, **POLICIES[policy]}
        settings = bench_settings(database_url, fake.base_url, **overrides)
        store = await Store.open(database_url, clock=clock.utc)
        client = AnthropicClient(api_key=API_KEY, base_url=fake.base_url)
        llm: LLMClient = StripOldImages(client, turns=STRIP_AFTER_TURNS) if policy == "strip" else client
        adapter = DirectMemoryAdapter()
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
        gateway.clock = clock.utc
        if policy != "ours":
            gateway.turns.media_aging = None  # the peers keep images until compaction or strip them
        chat = chat_ref("media", group=False)
        try:
            await gateway.start()
            for n, message in enumerate(messages):
                clock.seconds = message.at
                fake.set_time(message.at)
                msg = incoming(
                    chat, user_id="u1", name="Sam", text="", message_id=f"m{n}", sent_at=clock.utc()
                )
                if message.photo is None:
                    msg = dataclasses.replace(msg, text=message.text)
                else:
                    data = photos[message.photo]
                    attachment = Attachment(kind="photo", mime_type="image/jpeg", size=len(data), data=data)
                    msg = dataclasses.replace(
                        msg, caption=message.text, media=("photo",), attachments=(attachment,)
                    )
                await adapter.deliver(msg)
                await gateway.tasks.drain()
            stored = await _stored_media(gateway, chat.chat_id)
        finally:
            await gateway.stop()
            await client.close()
            await store.close()
    require_all_answered(fake, f"under {policy}")
    sent = [SentRequest(r.at, r.body, r.usage) for r in fake.requests if r.usage is not None]
    replies = [r for r in fake.requests if r.kind == "reply" and r.usage is not None]
    last = replies[-1].body
    visible = _images_in(last)
    named = set(re.findall(r"\bm(\d+)\b", _texts(last))) if policy == "ours" else set()
    fetchable = len({int(i) for i in named} & stored) if policy == "ours" else visible
    total = billed_input_usd(sent)
    turns = len(messages)
    largest = max(
        r.usage["input_tokens"] + r.usage["cache_read_input_tokens"] + r.usage["cache_creation_input_tokens"]
        for r in sent
    )
    compactions = sum(1 for r in fake.requests if r.kind == "summary")
    return Outcome(
        policy,
        total / turns,
        total,
        largest,
        compactions,
        visible,
        fetchable,
        turns,
        time.perf_counter() - started,
    )


async def _stored_media(gateway: Gateway, chat_id: str) -> set[int]:
    chat = await gateway.store.get_or_create_chat("bench", chat_id, None, kind="private", title=None)
    return await gateway.media_store.ids(chat.id)


def _images_in(body: dict[str, Any]) -> int:
    return sum(
        1
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "image"
    )


def _texts(body: dict[str, Any]) -> str:
    parts: list[str] = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            parts.append(content)
            continue
        for b in content:
            if b.get("type") == "text":
                parts.append(str(b["text"]))
            elif b.get("type") == "tool_result" and isinstance(b.get("content"), str):
                parts.append(b["content"])
    return "\n".join(parts)


async def run(*, db: str = "postgres", pg_url: str = DEFAULT_POSTGRES_URL) -> dict[str, Outcome]:
    messages = trace()
    photos = sum(1 for m in messages if m.photo is not None)
    span_h = (messages[-1].at - messages[0].at) / 3600
    print(
        f"media trace: {len(messages)} user messages ({photos} photos, 1280x960) over {span_h:.1f} h",
        flush=True,
    )
    results: dict[str, Outcome] = {}
    for policy in POLICIES:
        async with fresh_database(db, postgres_url=pg_url, durable=False) as url:
            outcome = await run_policy(policy, messages, url)
        results[policy] = outcome
        print(
            f"media[{policy:5s}] ${outcome.cost_per_turn:.5f}/turn (${outcome.total_cost:.4f} total), "
            f"largest request {outcome.largest_request:,} tokens, {outcome.compactions} compactions, "
            f"images at the end: {outcome.visible} visible, {outcome.fetchable} visible or fetchable "
            f"({outcome.wall_s:.0f}s)",
            flush=True,
        )
    cheaper_peer = min(results["keep"].cost_per_turn, results["strip"].cost_per_turn)
    ours = results["ours"]
    print(
        f"media target: all {PHOTOS} fetchable -> {ours.fetchable}/{PHOTOS}; cost <= cheaper peer -> "
        f"{ours.cost_per_turn / cheaper_peer:.2f}x of ${cheaper_peer:.5f}/turn",
        flush=True,
    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    args = parser.parse_args()
    asyncio.run(run(db=args.db, pg_url=args.postgres_url))


if __name__ == "__main__":
    main()
