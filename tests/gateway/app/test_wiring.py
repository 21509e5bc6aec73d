"""Start-up wiring of the models: the planned window, the summary model's window, the model line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.app.wiring import (
    check_models,
    compaction_policy,
    context_engine,
    main_model,
    model_status_line,
    summary_model,
)
from gateway.config import DEFAULT_PLANNED_WINDOW, ConfigError, Settings, load_settings


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


def test_a_1m_model_plans_for_the_default_window_and_a_200k_model_for_its_own() -> None:
    sonnet55 = main_model(settings(model="claude-sonnet-5-5"))
    assert sonnet55.context_window == DEFAULT_PLANNED_WINDOW < 1_000_000
    assert main_model(settings(model="claude-sonnet-4-6")).context_window == 200_000
    line = model_status_line(settings(model="claude-sonnet-5-5"), sonnet55)
    assert f"window 1,000,000 tokens, compaction plans for {DEFAULT_PLANNED_WINDOW:,}" in line


def test_the_thresholds_are_shares_of_the_planned_window() -> None:
    s = settings(model="claude-sonnet-5-5", context={"planned_window": 500_000})
    model = main_model(s)
    assert model.context_window == 500_000
    assert compaction_policy(s, model).context_length == 500_000


def test_the_older_name_still_sets_the_planned_window(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MODEL_CONTEXT_LENGTH", "300000")
    monkeypatch.setenv("MODEL", "claude-sonnet-5-5")
    assert main_model(load_settings()).context_window == 300_000
    monkeypatch.setenv("CONTEXT__PLANNED_WINDOW", "300000")
    assert main_model(load_settings()).context_window == 300_000  # both, equal: fine
    monkeypatch.setenv("CONTEXT__PLANNED_WINDOW", "400000")
    with pytest.raises(ConfigError, match=r"^context.planned_window .*MODEL_CONTEXT_LENGTH .*disagree"):
        main_model(load_settings())


def test_a_planned_window_beyond_the_models_window_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"^context.planned_window: 500,000 tokens is more than claude-sonnet-4-6"
    ):
        main_model(settings(model="claude-sonnet-4-6", context={"planned_window": 500_000}))
    # an unknown model's window is a guess: the operator's figure stands
    assert (
        main_model(settings(model="claude-future-9", model_context_length=500_000)).context_window == 500_000
    )


def test_a_summary_model_smaller_than_the_planned_window_is_refused() -> None:
    s = settings(
        model="claude-sonnet-5-5",
        context={"planned_window": 1_000_000},
        auxiliary={"compression": {"model": "claude-haiku-4-5"}},
    )
    with pytest.raises(ConfigError) as caught:
        check_models(s)
    message = str(caught.value)
    assert message.startswith("auxiliary.compression.model: claude-haiku-4-5's window (200,000 tokens)")
    assert "\n" not in message
    # the same summary model covers a planned window of its size, and the default covers 1M
    fits = settings(
        model="claude-sonnet-5-5",
        context={"planned_window": 200_000},
        auxiliary={"compression": {"model": "claude-haiku-4-5"}},
    )
    assert summary_model(fits, main_model(fits)).name == "claude-haiku-4-5"
    big = settings(model="claude-sonnet-5-5", context={"planned_window": 1_000_000})
    assert summary_model(big, main_model(big)).name == "claude-haiku-5-5"


def test_the_seed_provider_key_is_accepted_where_it_means_our_one_api() -> None:
    for provider in ("auto", "main", "anthropic"):
        assert settings(auxiliary={"compression": {"provider": provider}}).summary_model == "claude-haiku-5-5"
    with pytest.raises(ConfigError, match=r"auxiliary.compression.provider"):
        load_settings(_env_file=None, auxiliary={"compression": {"provider": "openrouter"}})
    with pytest.raises(ConfigError, match=r"provider main uses the reply model's endpoint"):
        load_settings(
            _env_file=None,
            auxiliary={"compression": {"provider": "main", "base_url": "http://127.0.0.1:9/"}},
        )


@pytest.mark.parametrize(
    "model", ["claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5", "claude-fable-5-1"]
)
def test_server_compaction_starts_on_the_current_models(model: str) -> None:
    context_engine(settings(model=model, context={"engine": "server"}))


async def test_a_summary_model_on_its_own_endpoint_keeps_the_agent_timeouts() -> None:
    from gateway.app.serve import _make_llm, _make_summary_llm
    from gateway.config import Settings

    settings = Settings(
        _env_file=None,
        anthropic_api_key="k",
        agent={"llm_timeout_s": 7, "llm_total_timeout_s": 11},
        auxiliary={"compression": {"base_url": "http://127.0.0.1:9/summary"}},
    )
    main = _make_llm(settings)
    summary = _make_summary_llm(settings, main)
    try:
        assert summary is not main
        assert str(summary._sdk.base_url).rstrip("/") == "http://127.0.0.1:9/summary"
        assert summary._total_timeout_s == main._total_timeout_s == 11
        assert summary._sdk.timeout == main._sdk.timeout
    finally:
        await summary.close()
        await main.close()


def test_a_web_tool_version_newer_than_the_model_takes_stops_the_start() -> None:
    pinned = {"web_search": {"version": "web_search_20260209"}}
    with pytest.raises(ConfigError) as caught:
        check_models(settings(model="claude-haiku-4-5", tools=pinned))
    assert str(caught.value) == (
        "tools.web_search.version (TOOLS__WEB_SEARCH__VERSION) = web_search_20260209: claude-haiku-4-5 takes "
        "web_search versions up to web_search_20250305; set auto or an older version"
    )
    fetch = {"web_fetch": {"version": "web_fetch_20260318"}}
    with pytest.raises(ConfigError, match=r"^tools.web_fetch.version .* up to web_fetch_20260209;"):
        check_models(settings(model="claude-sonnet-4-6", tools=fetch))
    # what the model takes, an older pin, auto, a switched-off tool and an unknown model all start
    check_models(settings(model="claude-sonnet-4-6", tools=pinned))
    older = {"web_search": {"version": "web_search_20250305"}}
    check_models(settings(model="claude-sonnet-5-5", tools=older))
    check_models(settings(model="claude-haiku-4-5"))
    switched_off = {"web_search": {**pinned["web_search"], "enabled": False}}
    check_models(settings(model="claude-haiku-4-5", tools=switched_off))
    check_models(settings(model="claude-future-9", tools=pinned))
