"""The model table: lookups, conservative defaults for unknown models, and call costs."""

from __future__ import annotations

import logging

import pytest

from agent import models
from agent.models import MODELS, canonical_model_name, cost_usd, lookup_model
from agent.usage import Usage


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("claude-haiku-4-5", "claude-haiku-4-5"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("claude-opus-4-5@20251101", "claude-opus-4-5"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("claude-opus-4-1-latest", "claude-opus-4-1"),
        ("Claude-Sonnet-4-6", "claude-sonnet-4-6"),
    ],
)
def test_dated_and_provider_ids_resolve_to_the_table_entry(model_id: str, expected: str) -> None:
    assert canonical_model_name(model_id) == expected
    info = lookup_model(model_id)
    assert info.known
    assert info == MODELS[expected]


def test_table_figures() -> None:
    sonnet = lookup_model("claude-sonnet-4-6")
    assert (sonnet.context_window, sonnet.input_per_mtok, sonnet.output_per_mtok) == (200_000, 3.0, 15.0)
    haiku = lookup_model("claude-haiku-4-5")
    assert (haiku.input_per_mtok, haiku.output_per_mtok, haiku.min_cacheable_tokens) == (1.0, 5.0, 4096)
    opus = lookup_model("claude-opus-4-5")
    assert (opus.input_per_mtok, opus.output_per_mtok, opus.max_output) == (5.0, 25.0, 64_000)
    assert lookup_model("claude-sonnet-4-5").deprecated
    assert not sonnet.deprecated


def test_cache_prices_are_multiples_of_the_input_price() -> None:
    sonnet = lookup_model("claude-sonnet-4-6")
    assert sonnet.cache_write_5m_per_mtok == pytest.approx(3.75)
    assert sonnet.cache_write_1h_per_mtok == pytest.approx(6.0)
    assert sonnet.cache_read_per_mtok == pytest.approx(0.30)


def test_context_override_replaces_only_the_window() -> None:
    info = lookup_model("claude-sonnet-4-6", context_override=1_000_000)
    assert info.context_window == 1_000_000
    assert info.input_per_mtok == 3.0
    assert MODELS["claude-sonnet-4-6"].context_window == 200_000
    with pytest.raises(ValueError):
        lookup_model("claude-sonnet-4-6", context_override=0)


def test_unknown_models_get_conservative_defaults_and_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(models, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="agent.models"):
        first = lookup_model("claude-future-9")
        second = lookup_model("claude-future-9")
    assert first == second
    assert not first.known
    assert first.context_window == 200_000
    assert first.min_cacheable_tokens == 4096
    assert first.input_per_mtok == max(m.input_per_mtok for m in MODELS.values())
    assert first.output_per_mtok == max(m.output_per_mtok for m in MODELS.values())
    assert first.max_output == min(m.max_output for m in MODELS.values())
    warnings = [r for r in caplog.records if "claude-future-9" in r.getMessage()]
    assert len(warnings) == 1
    assert lookup_model("claude-future-9", context_override=500_000).context_window == 500_000


def test_cost_with_worked_numbers() -> None:
    usage = Usage(
        input_tokens=1_000,
        output_tokens=500,
        cache_creation_input_tokens=10_000,
        cache_read_input_tokens=50_000,
    )
    # sonnet: 1,000 x $3 + 10,000 x $3.75 + 50,000 x $0.30 + 500 x $15, per million tokens
    assert cost_usd("claude-sonnet-4-6", usage, ttl="5m") == pytest.approx(0.003 + 0.0375 + 0.015 + 0.0075)
    # the hour-long cache writes cost 2x input: 10,000 x $6
    assert cost_usd("claude-sonnet-4-6", usage, ttl="1h") == pytest.approx(0.003 + 0.060 + 0.015 + 0.0075)
    haiku = lookup_model("claude-haiku-4-5-20251001")
    assert cost_usd(haiku, Usage(input_tokens=1_000_000, output_tokens=1_000_000)) == pytest.approx(6.0)
    assert cost_usd(haiku, Usage()) == 0.0


def test_unknown_models_are_never_cheaper_than_any_known_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "_warned", set())
    usage = Usage(
        input_tokens=3_000,
        output_tokens=700,
        cache_creation_input_tokens=2_000,
        cache_read_input_tokens=9_000,
    )
    unknown = cost_usd("some-new-model", usage)
    assert all(unknown >= cost_usd(info, usage) for info in MODELS.values())


def test_the_current_generation_caches_from_512_tokens_and_reads_for_less() -> None:
    # Opus 5.5 and Sonnet 5.5 read the cache at 0.05x their input price, Fable 5.1 at 0.025x; writes
    # cost what they cost on every model (1.25x and 2x)
    expected = {
        "claude-opus-5-5": (4.0, 0.20),
        "claude-sonnet-5-5": (2.0, 0.10),
        "claude-fable-5-1": (10.0, 0.25),
    }
    for name, (price, read) in expected.items():
        info = lookup_model(name)
        assert info.known
        assert (info.context_window, info.min_cacheable_tokens) == (1_000_000, 512)
        assert (info.input_per_mtok, info.cache_read_per_mtok) == (price, pytest.approx(read))
        assert info.cache_write_5m_per_mtok == pytest.approx(1.25 * price)
        assert info.cache_write_1h_per_mtok == pytest.approx(2.0 * price)
    assert lookup_model("claude-sonnet-5.5").name == "claude-sonnet-5-5"
    # 100,000 tokens read: $0.01 on Sonnet 5.5, $0.02 on Sonnet 5 at the same input price
    reads = Usage(cache_read_input_tokens=100_000)
    assert cost_usd("claude-sonnet-5-5", reads) == pytest.approx(0.01)
    assert cost_usd("claude-sonnet-5", reads) == pytest.approx(0.02)


def test_haiku_5_5_bills_a_prompt_over_100k_tokens_at_five_times_every_price() -> None:
    haiku = lookup_model("claude-haiku-5-5")
    assert (haiku.context_window, haiku.min_cacheable_tokens) == (1_000_000, 512)
    # 60,000 read + 40,000 uncached = 100,000 prompt tokens, 1,000 out: the low prices
    # 40,000 x $0.10 + 60,000 x $0.01 + 1,000 x $0.50 per million
    at_limit = Usage(input_tokens=40_000, cache_read_input_tokens=60_000, output_tokens=1_000)
    assert cost_usd(haiku, at_limit) == pytest.approx(0.004 + 0.0006 + 0.0005)
    # one token more: every price five times ($0.50 / $0.05 / $2.50)
    over = Usage(input_tokens=40_001, cache_read_input_tokens=60_000, output_tokens=1_000)
    assert cost_usd(haiku, over) == pytest.approx((40_001 * 0.5 + 60_000 * 0.05 + 1_000 * 2.5) / 1e6)


def test_the_default_models_are_table_entries() -> None:
    # a default missing from the table would be priced and sized as an unknown model
    from gateway.config import DEFAULT_SUMMARY_MODEL, Settings

    for name in (Settings(_env_file=None).model, DEFAULT_SUMMARY_MODEL):
        info = lookup_model(name)
        assert info.known, name
        assert not info.deprecated, name


def test_server_compaction_follows_the_compaction_pages_supported_models() -> None:
    supported = {
        "claude-fable-5-1",
        "claude-fable-5",
        "claude-opus-5-5",
        "claude-opus-5",
        "claude-opus-4-8",
        "claude-opus-4-7",
        "claude-opus-4-6",
        "claude-sonnet-5-5",
        "claude-sonnet-5",
        "claude-sonnet-4-6",
        "claude-haiku-5-5",
    }
    assert {name for name, info in MODELS.items() if info.server_compaction} == supported


def test_flags_of_the_current_generation() -> None:
    preserved = {
        "claude-fable-5-2",
        "claude-fable-5-1",
        "claude-opus-5-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
    }
    assert {n for n, m in MODELS.items() if m.preserved_thinking} == preserved
    system = {"claude-opus-4-8", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"}
    assert {n for n, m in MODELS.items() if m.mid_conversation_system} == system
    assert all(MODELS[n].adaptive_thinking_default for n in preserved | {"claude-sonnet-5", "claude-opus-5"})
    assert not MODELS["claude-sonnet-4-6"].adaptive_thinking_default


def test_fable_5_2_and_haiku_5_5_prices() -> None:
    fable = lookup_model("claude-fable-5-2")
    assert (fable.input_per_mtok, fable.output_per_mtok) == (8.0, 40.0)
    assert fable.cache_read_per_mtok == pytest.approx(0.20)
    assert (fable.cache_write_5m_per_mtok, fable.cache_write_1h_per_mtok) == (10.0, 16.0)
    haiku = lookup_model("claude-haiku-5-5")
    assert haiku.cache_read_per_mtok == pytest.approx(0.01)
    # every price of a call is five times higher once its prompt (cache reads included) passes 100K
    small = Usage(input_tokens=1_000, cache_read_input_tokens=99_000, output_tokens=1_000)
    large = Usage(input_tokens=1_000, cache_read_input_tokens=99_001, output_tokens=1_000)
    assert cost_usd(haiku, small) == pytest.approx((1_000 * 0.1 + 99_000 * 0.01 + 1_000 * 0.5) / 1e6)
    assert cost_usd(haiku, large) == pytest.approx(5 * (1_000 * 0.1 + 99_001 * 0.01 + 1_000 * 0.5) / 1e6)
