"""The cost benchmark's verdict on its targets."""

from __future__ import annotations

from bench.bench_cost import verdict


def _row(default: float, oracle: float, five: float = 9.0, hour: float = 9.0) -> dict[str, float]:
    return {"default": default, "oracle_default": oracle, "5m": five, "1h": hour}


def test_a_ratio_that_rounds_to_the_target_is_still_a_miss() -> None:
    # 1.0537 shows as 1.05 in the two-decimal table; the verdict says it missed, to three decimals
    lines = verdict({"help": _row(1.0537, 1.0), "group": _row(0.9, 1.0, five=1.2, hour=0.95)})
    assert lines[0] == "default/oracle <= 1.05: MISSED in help (help 1.054, group 0.900)"
    assert lines[1] == "default <= the cheaper fixed TTL: met (help 0.117, group 0.947)"


def test_every_target_met() -> None:
    lines = verdict({"help": _row(1.0474, 1.0, hour=1.2)})
    assert lines == [
        "default/oracle <= 1.05: met (help 1.047)",
        "default <= the cheaper fixed TTL: met (help 0.873)",
    ]
