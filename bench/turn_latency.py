"""Reply latency under one set of settings: sampled messages of real-looking chats answered by the
in-process gateway, streaming, against the paced fake model; timed to the first words shown and to the
whole reply.

Each sampled message (its text, and the tool rounds its answer takes, from `bench.traces`) opens a chat
of its own; they arrive `gap_s` apart, so several are answered at once, as in a busy hour. The fake
writes like `bench.bench_latency`'s model (first token after 0.8 s, then 60 tokens/s) and thinks before
each answer as much as the request's effort asks (`tests.fakes.anthropic.effort`); every tool round is a
call of its own, with its own thinking. The fake does not model reading the prompt, so a fresh chat
answers as fast as a long one: a chat per message loses nothing here.

Time is compressed: the fake runs `speed` times faster, and each turn's model time, which the fake
records (`RecordedRequest.paced`), is stretched back: reported = measured + (speed - 1) x model time.
The gateway's own time (storing, building the request, running tools, showing the text) counts once,
as measured.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agent.llm import AnthropicClient
from bench.bench_latency import FIRST_TOKEN_S, TOKENS_PER_S
from bench.replay import API_KEY, bench_settings, require_all_answered
from bench.traces import Event, TraceSizes, generate
from gateway.app.gateway import Gateway
from gateway.store import Store
from tests.fakes.anthropic import FakeAnthropic, Pacing, RecordedRequest, ThinkingVolume
from tests.support.memory_adapter import StreamingMemoryAdapter, chat_ref, incoming

ECHO_LIMIT = 600
"""The replays' reply size (`bench.replay`): up to 600 characters, about 170 tokens."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One sampled message; `tag` opens its text and names its chat."""

    tag: str
    family: str
    event: Event


@dataclass(frozen=True, slots=True)
class TurnTiming:
    family: str
    first_text_s: float
    """From the message's arrival to the first words of the reply on screen."""
    reply_s: float
    """To the whole reply sent."""
    calls: int


def sample_turns(families: Sequence[str], *, per_family: int, sizes: TraceSizes, seed: int) -> list[Turn]:
    """The first `per_family` messages of each family's trace (the same draw the cost replays use)."""
    turns: list[Turn] = []
    for family in families:
        events = [e for e in generate(family, sizes=sizes, seed=seed) if e.addressed][:per_family]
        turns += [Turn(f"[{family[0]}{n}]", family, e) for n, e in enumerate(events)]
    return turns


def _own(record: RecordedRequest, tag: str) -> bool:
    messages = (record.body or {}).get("messages") or []
    return bool(messages) and tag in json.dumps(messages[0], ensure_ascii=False)


def _model_seconds(records: list[RecordedRequest]) -> tuple[float, float]:
    """The fake's time for one turn: before the reply's first text (every earlier call whole, then the
    last call up to its text), and in all."""
    paced = [r.paced for r in records if r.paced is not None]
    if not paced:
        return 0.0, 0.0
    total = sum(p.total_s for p in paced)
    last = paced[-1]
    before = total - last.total_s + (last.first_text_s if last.first_text_s is not None else last.total_s)
    return before, total


async def time_turns(
    turns: Sequence[Turn],
    *,
    database_url: str,
    overrides: dict[str, Any],
    thinking: int,
    speed: float,
    gap_s: float,
) -> list[TurnTiming]:
    """Answer every turn under `overrides` (settings) on a fresh, migrated database, the fake thinking
    `thinking` tokens per call at high effort; the timings in the turns' order."""
    pacing = Pacing(first_token_s=FIRST_TOKEN_S / speed, tokens_per_s=TOKENS_PER_S * speed)
    volume = ThinkingVolume(high_tokens=thinking)
    url = database_url
    async with FakeAnthropic(
        api_key=API_KEY, echo_limit=ECHO_LIMIT, pacing=pacing, thinking_volume=volume
    ) as fake:
        settings = bench_settings(url, fake.base_url, scheduler={"enabled": False}, **overrides)
        store = await Store.open(url)
        llm = AnthropicClient(api_key=API_KEY, base_url=fake.base_url)
        adapter = StreamingMemoryAdapter()
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
        asked: dict[str, float] = {}
        try:
            await gateway.start()
            for turn in turns:
                for calls in turn.event.tool_rounds:
                    fake.script_reply(tool_uses=list(calls), within=turn.tag)
            for n, turn in enumerate(turns):
                chat = chat_ref(turn.tag, group=False)
                text = f"{turn.tag} {turn.event.text}"
                message = incoming(
                    chat,
                    user_id=turn.event.user_id,
                    name=turn.event.name,
                    text=text,
                    message_id=f"m{n}",
                    sent_at=datetime.now(UTC),
                )
                asked[turn.tag] = time.perf_counter()
                await adapter.deliver(message)
                await asyncio.sleep(gap_s)
            await gateway.tasks.drain()
        finally:
            await gateway.stop()
            await llm.close()
            await store.close()
        require_all_answered(fake, "while timing turns")
        sent = {m.chat.chat_id: at for m, at in zip(adapter.sent, adapter.sent_at, strict=True)}
        timings = []
        for turn in turns:
            if turn.tag not in sent:
                raise RuntimeError(f"no reply in chat {turn.tag}")
            records = [r for r in fake.requests if r.kind == "reply" and _own(r, turn.tag)]
            before, total = _model_seconds(records)
            start = asked[turn.tag]
            first = adapter.first_text.get(turn.tag, sent[turn.tag])
            timings.append(
                TurnTiming(
                    turn.family,
                    first_text_s=first - start + (speed - 1) * before,
                    reply_s=sent[turn.tag] - start + (speed - 1) * total,
                    calls=len(records),
                )
            )
        return timings
