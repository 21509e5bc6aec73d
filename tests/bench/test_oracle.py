"""The hindsight oracle: hand-computed multipliers on tiny sequences, and never above a real bill."""

from __future__ import annotations

import random
from typing import Any

import pytest

from agent.caching.markers import apply_cache_control
from agent.models import STANDARD_CACHE_PRICES, lookup_model
from bench.oracle import SentRequest, _best_multiplier, billed_input_usd, oracle_input_usd
from tests.fakes.anthropic.cache import PrefixCache, serialize_prefix

MODEL = "claude-sonnet-4-6"
PRICE = lookup_model(MODEL).input_per_mtok / 1_000_000
MINUTE = 60.0


@pytest.mark.parametrize(
    ("uses", "expected"),
    [
        ([(0.0, True)], 1.0),  # used once: never worth a write
        ([(0.0, True), (120.0, True)], 1.25 + 0.1),  # 5m write then a read
        ([(0.0, True), (1_800.0, True)], 2.0),  # 30 min apart: 1h write + read (2.1) loses to 1 + 1
        ([(0.0, True), (1_200.0, True), (2_400.0, True)], 2.0 + 0.1 + 0.1),  # 1h write, two reads
        ([(0.0, True), (120.0, True), (240.0, True), (7_200.0, True)], 1.25 + 0.1 + 0.1 + 1.0),
        ([(0.0, False), (60.0, False), (120.0, False)], 3.0),  # below the minimum: never cacheable
        ([(0.0, False), (60.0, True), (120.0, True)], 1.0 + 1.25 + 0.1),
    ],
)
def test_best_multiplier_on_hand_computed_uses(uses: list[tuple[float, bool]], expected: float) -> None:
    assert _best_multiplier(uses, prices=STANDARD_CACHE_PRICES) == pytest.approx(expected)


def _text(n: int, word: str) -> str:
    return " ".join([word] * n)


def _body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": MODEL, "system": [{"type": "text", "text": _text(400, "sys")}], "messages": messages}


def test_three_requests_priced_block_by_block() -> None:
    u1 = {"role": "user", "content": _text(300, "one")}
    a1 = {"role": "assistant", "content": _text(50, "ans")}
    u2 = {"role": "user", "content": _text(80, "two")}
    a2 = {"role": "assistant", "content": _text(40, "re")}
    u3 = {"role": "user", "content": _text(60, "three")}
    bodies = [_body([u1]), _body([u1, a1, u2]), _body([u1, a1, u2, a2, u3])]
    times = [0.0, 2 * MINUTE, 32 * MINUTE]
    requests = [SentRequest(t, b, {}) for t, b in zip(times, bodies, strict=True)]
    tokens = [b.tokens for b in serialize_prefix(bodies[2])]  # system, u1, a1, u2, a2, u3
    # system and u1 are sent at 0, 2 and 32 min: a 5m write, a read at 2 min inside the one-hour entry
    # that request writes further on (the entry advances), and a read at 32 min: 1.25 + 0.1 + 0.1 = 1.45,
    # less than a 1h write and two reads (2.2)
    # a1 and u2 at 2 and 32 min: paying twice (2.0) beats a 1h write and a read (2.1)
    # a2 and u3 once: 1.0
    expected = (tokens[0] + tokens[1]) * 1.45 + (tokens[2] + tokens[3]) * 2.0 + (tokens[4] + tokens[5]) * 1.0
    assert oracle_input_usd(requests, min_cacheable={MODEL: 800}) == pytest.approx(expected * PRICE)
    # with a minimum above every prompt nothing can be cached: the oracle is the uncached price
    everything = sum(t for b in bodies for t in (x.tokens for x in serialize_prefix(b)))
    assert oracle_input_usd(requests, min_cacheable={MODEL: 10**9}) == pytest.approx(everything * PRICE)


def _replay(bodies: list[dict[str, Any]], times: list[float], ttl: str | None) -> list[SentRequest]:
    cache = PrefixCache()
    sent: list[SentRequest] = []
    for at, body in zip(times, bodies, strict=True):
        if ttl is not None:
            marked = apply_cache_control(body["system"], body["messages"], ttl=ttl)  # type: ignore[arg-type]
            body = {**body, "system": marked.system_blocks, "messages": marked.messages}
        usage = cache.process("ns", serialize_prefix(body), min_cacheable=1024, now=at)
        split = {"ephemeral_5m_input_tokens": usage.cache_creation_5m,
                 "ephemeral_1h_input_tokens": usage.cache_creation_1h}  # fmt: skip
        sent.append(
            SentRequest(
                at,
                body,
                {
                    "input_tokens": usage.input_tokens,
                    "cache_read_input_tokens": usage.cache_read_input_tokens,
                    "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                    "cache_creation": split,
                },
            )
        )
    return sent


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_oracle_never_exceeds_what_any_policy_is_billed(seed: int) -> None:
    rng = random.Random(seed)
    history: list[dict[str, Any]] = []
    bodies: list[dict[str, Any]] = []
    times: list[float] = []
    t = 0.0
    for turn in range(25):
        history = [*history, {"role": "user", "content": _text(rng.randint(5, 300), f"u{turn}")}]
        bodies.append(_body(history))
        times.append(t)
        history = [*history, {"role": "assistant", "content": _text(rng.randint(5, 80), f"a{turn}")}]
        t += rng.choice([30.0, 200.0, 900.0, 2_400.0, 5_000.0])
    bills = {ttl: billed_input_usd(_replay(bodies, times, ttl)) for ttl in (None, "5m", "1h")}
    oracle = oracle_input_usd(_replay(bodies, times, None), min_cacheable={MODEL: 1024})
    assert all(oracle <= bill + 1e-12 for bill in bills.values()), (oracle, bills)
    assert oracle < bills[None]  # some prefix is resent within the hour, so caching it pays


@pytest.mark.parametrize("system_words", [200, 1_500])
def test_a_shared_opening_shorter_than_the_minimum_is_not_read_across_chats(system_words: int) -> None:
    """Two chats with the same system prompt, two minutes apart. The API only caches a prefix at a
    breakpoint that reaches the model's minimum, so a shorter shared opening can never be read from the
    other chat's entry (each chat pays its whole request once); a longer one can (a 5m write, a read)."""
    system = [{"type": "text", "text": _text(system_words, "sys")}]
    bodies = [
        {"model": MODEL, "system": system, "messages": [{"role": "user", "content": _text(900, word)}]}
        for word in ("ada", "bob")
    ]
    requests = [SentRequest(at, body, {}) for at, body in zip((0.0, 2 * MINUTE), bodies, strict=True)]
    system_tokens, ada = (b.tokens for b in serialize_prefix(bodies[0]))
    _, bob = (b.tokens for b in serialize_prefix(bodies[1]))
    floor = 1_024
    assert min(ada, bob) + system_tokens >= floor  # each request alone can be cached
    if system_tokens < floor:
        expected = (system_tokens + ada) + (system_tokens + bob)
    else:
        expected = system_tokens * (1.25 + 0.1) + ada + bob
    assert oracle_input_usd(requests, min_cacheable={MODEL: floor}) == pytest.approx(expected * PRICE)
