"""Shaping rows for the templates: names, the fill, the chart's data, the daily figures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.commands.context_size import ContextSize
from gateway.dashboard import views
from gateway.store.dashboard import CallPoint, CompactionEvent
from gateway.store.records import ChatRecord

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def chat(kind: str = "group", title: str | None = "Ops") -> ChatRecord:
    return ChatRecord(
        id=1, platform="telegram", chat_id="-5", thread_id="", kind=kind, title=title, created_at=T0
    )


def call(
    minutes: int, tokens: int, *, read: int = 0, cost: float = 0.01, purpose: str = "reply"
) -> CallPoint:
    return CallPoint(T0 + timedelta(minutes=minutes), purpose, tokens, read, 0, cost)


def event(minutes: int, before: int, after: int, outcome: str = "ok") -> CompactionEvent:
    return CompactionEvent(
        id=1,
        at=T0 + timedelta(minutes=minutes),
        trigger="hygiene",
        outcome=outcome,
        reason="",
        tokens_before=before,
        tokens_after=after,
        messages_before=10,
        messages_after=4,
        summary="s",
        undone=False,
        session_pk=1,
    )


def test_names_title_as_given_then_person_then_id() -> None:
    assert views.chat_name(chat(title="<b>x</b>")) == "<b>x</b>", "escaping is the template's"
    assert views.chat_name(chat("private", None), "Alice") == "Alice"
    assert views.chat_name(chat("private", None)) == "telegram private -5"


def test_fill_is_the_share_of_the_window() -> None:
    assert views.fill_percent(ContextSize(tokens=2560, window=5120, reported=None, since=0)) == 50
    assert views.fill_percent(ContextSize(tokens=0, window=0, reported=None, since=0)) == 0


def test_chart_data_aligns_calls_and_compactions_with_flat_thresholds() -> None:
    data = views.chart_data(
        [call(0, 1000), call(5, 3000), call(6, 50, purpose="summary")],
        [event(10, 3200, 900), event(12, 900, 900, outcome="aborted")],
        window=10_000,
        compressor_threshold=0.5,
        hygiene_threshold=0.85,
    )
    assert data["context"] == [1000, 3000, None]
    assert data["compactions"] == [None, None, 3200]
    assert data["compressor"] == [5000] * 3
    assert data["hygiene"] == [8500] * 3
    assert data["x"] == sorted(data["x"])  # type: ignore[type-var]


def test_by_day_groups_in_the_caps_time_zone() -> None:
    late = CallPoint(datetime(2026, 3, 10, 23, 30, tzinfo=UTC), "reply", 1000, 800, 0, 0.02, web_lookups=2)
    early = CallPoint(datetime(2026, 3, 10, 1, 0, tzinfo=UTC), "reply", 1000, 0, 0, 0.01, web_lookups=1)
    utc = views.by_day([early, late], "UTC")
    assert [(d.day.isoformat(), d.calls, d.cache_read, d.web_lookups) for d in utc] == [
        ("2026-03-10", 2, "40%", 3)
    ]
    berlin = views.by_day([early, late], "Europe/Berlin")
    assert [d.day.isoformat() for d in berlin] == ["2026-03-11", "2026-03-10"]


def test_period_starts_are_local_midnight_and_the_first() -> None:
    day, month = views.period_starts(datetime(2026, 3, 10, 23, 30, tzinfo=UTC), "Europe/Berlin")
    assert (day.day, day.hour) == (11, 0)
    assert (month.month, month.day) == (3, 1)
