"""The spending policy: which budgets a call counts toward, when their days and months end, what a call
may cost at most and what it was billed."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from agent.llm import LLMRequest, LLMResponse
from agent.models import MODELS, cost_usd, lookup_model
from agent.spending.periods import Caps, SpendFor, period_ends, period_keys
from agent.spending.prices import billed_usd, prompt_bound, server_tool_fees, worst_case_usd
from agent.tokens import Calibration
from agent.usage import Usage


def test_days_and_months_are_the_operators_not_utcs() -> None:
    late = datetime(2026, 12, 31, 23, 30, tzinfo=UTC)
    assert period_keys(late, "UTC") == ("2026-12-31", "2026-12")
    assert period_keys(late, "Asia/Tokyo") == ("2027-01-01", "2027-01")
    day_end, month_end = period_ends(late, "Asia/Tokyo")
    assert day_end == datetime(2027, 1, 2, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert month_end == datetime(2027, 2, 1, tzinfo=ZoneInfo("Asia/Tokyo"))


def test_a_day_with_a_clock_change_ends_at_local_midnight() -> None:
    # Lisbon leaves summer time on 25 Oct 2026: that day has 25 hours.
    morning = datetime(2026, 10, 25, 8, 0, tzinfo=UTC)
    day_end, _ = period_ends(morning, "Europe/Lisbon")
    assert day_end.astimezone(UTC) == datetime(2026, 10, 26, 0, 0, tzinfo=UTC)


def test_a_call_counts_toward_the_capped_lines_of_the_bot_its_chat_and_its_user() -> None:
    caps = Caps(bot_day=10, chat_day=2, chat_month=20, user_day=1)
    now = datetime(2026, 12, 6, 12, tzinfo=UTC)
    lines = caps.limits(SpendFor(chat_pk=7, user="telegram:42"), now)
    assert [(line.scope, line.period, line.cap_usd) for line in lines] == [
        ("bot", "2026-12-06", 10.0),
        ("chat:7", "2026-12", 20.0),
        ("chat:7", "2026-12-06", 2.0),
        ("user:telegram:42", "2026-12-06", 1.0),
    ]
    background = caps.limits(SpendFor(chat_pk=7), now)
    assert {line.scope for line in background} == {"bot", "chat:7"}
    assert [line.name for line in lines][-1] == "your daily budget"


def _request(text: str, *, max_tokens: int = 1000, cache: str | None = None, **extra: object) -> LLMRequest:
    block: dict[str, object] = {"type": "text", "text": text}
    if cache is not None:
        block["cache_control"] = {"type": "ephemeral", "ttl": cache}
    return LLMRequest(
        model="claude-sonnet-5-5",
        system=[{"type": "text", "text": "You are helpful."}],
        messages=[{"role": "user", "content": [block]}],
        max_tokens=max_tokens,
        **extra,  # type: ignore[arg-type]
    )


def test_the_worst_case_prices_a_marked_prompt_as_a_one_hour_write_and_the_whole_output() -> None:
    model = lookup_model("claude-sonnet-5-5")
    plain = worst_case_usd(_request("hello " * 2000))
    one_hour = worst_case_usd(_request("hello " * 2000, cache="1h"))
    prompt = prompt_bound(_request("hello " * 2000))
    assert plain == (prompt * model.input_per_mtok + 1000 * model.output_per_mtok) / 1e6
    assert one_hour == (prompt * model.input_per_mtok * 2.0 + 1000 * model.output_per_mtok) / 1e6


def test_a_request_the_api_may_compact_reserves_the_compaction_pass_too() -> None:
    plain = worst_case_usd(_request("hello " * 2000))
    compacting = worst_case_usd(_request("hello " * 2000, context_management={"edits": []}))
    assert compacting == 2 * plain


def test_each_search_the_tool_may_run_is_reserved() -> None:
    assert server_tool_fees([{"type": "web_search_20260209", "name": "web_search", "max_uses": 3}]) == 0.03
    assert server_tool_fees([{"name": "recall", "input_schema": {}}]) == 0.0


@given(
    words=st.integers(min_value=1, max_value=3000),
    output=st.integers(min_value=0, max_value=2000),
    factor=st.floats(min_value=1.0, max_value=1.2),
    one_hour=st.booleans(),
)
def test_what_a_call_is_billed_never_exceeds_its_worst_case(
    words: int, output: int, factor: float, one_hour: bool
) -> None:
    """The API counts the prompt up to 20% above tiktoken here, and writes all of it to the cache."""
    request = _request("word " * words, max_tokens=2000, cache="1h" if one_hour else "5m")
    calibration = Calibration("claude-sonnet-5-5")
    base = prompt_bound(request) / 1.25
    calibration.observe(estimated=max(500, int(base)), reported=int(max(500, base) * factor))
    prompt = int(base * factor)
    usage = Usage(
        cache_creation_input_tokens=prompt,
        output_tokens=output,
        cache_creation_1h_input_tokens=prompt if one_hour else 0,
    )
    billed = billed_usd(
        LLMResponse(content=[], stop_reason="end_turn", usage=usage, model="claude-sonnet-5-5")
    )
    assert billed <= worst_case_usd(request, calibration)


def test_billing_prices_one_hour_writes_as_the_api_reports_them() -> None:
    model = lookup_model("claude-opus-5-5")
    split = Usage(cache_creation_input_tokens=1000, cache_creation_1h_input_tokens=400)
    expected = (400 * model.input_per_mtok * 2.0 + 600 * model.input_per_mtok * 1.25) / 1e6
    assert abs(cost_usd(model, split) - expected) < 1e-12
    searches = Usage(output_tokens=0, web_search_requests=3)
    assert cost_usd(model, searches) == 0.03


def test_every_model_the_table_allows_has_prices() -> None:
    for name, model in MODELS.items():
        assert model.input_per_mtok > 0, name
        assert model.output_per_mtok > 0, name
        assert model.cache.write_1h >= model.cache.write_5m >= 1.0, name
