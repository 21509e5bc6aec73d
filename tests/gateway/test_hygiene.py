"""The hygiene decision: 85% of the window, reported size first, never below four messages."""

from __future__ import annotations

from gateway.hygiene import decide


def call(**kw: object) -> bool:
    args: dict[str, object] = {
        "enabled": True,
        "message_count": 10,
        "last_prompt_tokens": None,
        "tokens_since_call": 0,
        "active_tokens": 0,
        "context_length": 1000,
        "threshold": 0.85,
    }
    args.update(kw)
    return decide(**args).fire  # type: ignore[arg-type]


def test_fires_at_the_threshold_from_the_reported_size_plus_new_messages() -> None:
    assert not call(last_prompt_tokens=800, tokens_since_call=49, active_tokens=5000)
    assert call(last_prompt_tokens=800, tokens_since_call=50, active_tokens=0)


def test_falls_back_to_the_estimate_without_a_reported_size() -> None:
    assert call(active_tokens=850)
    assert not call(active_tokens=849)


def test_never_below_four_messages_or_when_disabled() -> None:
    assert not call(message_count=3, active_tokens=10_000)
    assert not call(enabled=False, active_tokens=10_000)
