"""The effort benchmark's latency run: a compressed run reports the model's time at full length."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.databases import fresh_sqlite
from bench.traces import Event
from bench.turn_latency import Turn, time_turns

QUESTION = Event(0.0, "c", False, "u", "Kim", "how do I reset the router", True)
LOOKUP = replace(QUESTION, text="what did we decide", tool_rounds=(({"name": "current_time", "input": {}},),))
TURNS = [Turn("[h0]", "help", QUESTION), Turn("[t0]", "tools", LOOKUP)]
THINKING = 120
"""Tokens per call at high: 2 s at 60 tokens/s (low: a quarter)."""


async def _timed(effort: str) -> dict[str, tuple[float, float, int]]:
    async with fresh_sqlite() as url:
        timings = await time_turns(
            TURNS,
            database_url=url,
            overrides={"agent": {"effort": effort}},
            thinking=THINKING,
            speed=4.0,
            gap_s=0.05,
        )
    return {t.family: (t.first_text_s, t.reply_s, t.calls) for t in timings}


async def test_thinking_time_reaches_the_reported_first_text_at_full_length() -> None:
    high = await _timed("high")
    low = await _timed("low")

    help_first, help_reply, help_calls = high["help"]
    assert help_calls == 1
    assert help_first >= 0.8 + 2.0  # the first token, then the thinking, both stretched back
    assert help_reply > help_first
    # one call thinks 1.5 s less at low; the tool round's answer is a second call that thinks too (the
    # run is compressed 4x and scaled back, so a busy machine's overhead is counted four times: the
    # tolerances leave room for it and still tell one call's thinking from two calls' and from none)
    assert help_first - low["help"][0] == pytest.approx(1.5, abs=0.7)
    assert high["tools"][2] == 2
    assert high["tools"][0] - low["tools"][0] == pytest.approx(3.0, abs=1.2)
