"""How a chat's keep-alive decisions held: hand-computed trust on tiny records (PRIOR 1, DECAY 0.9)."""

from __future__ import annotations

import pytest

from agent.caching.trust import MAX_TRUST, Pending, RefreshRecord

AT = 1_800_000_000.0


def test_a_chat_without_refreshes_takes_its_forecast_as_it_is() -> None:
    assert RefreshRecord().trust() == 1.0


def test_a_refresh_followed_in_time_raises_trust() -> None:
    record = RefreshRecord().predicted(AT, life=300.0, odds=0.5).settled(AT + 299.0)
    assert (record.expected, record.came, record.pending) == (0.5, 1.0, None)
    assert record.trust() == pytest.approx((1.0 + 1.0) / (0.5 + 1.0))


def test_a_request_after_the_renewed_life_did_not_follow_the_refresh() -> None:
    record = RefreshRecord().predicted(AT, life=300.0, odds=0.5).settled(AT + 301.0)
    assert (record.expected, record.came) == (0.5, 0.0)
    assert record.trust() == pytest.approx(1.0 / 1.5)


def test_a_pending_refresh_counts_as_unused_when_the_next_decision_is_made() -> None:
    # a decision is made only in an entry's last moments: no request came in the renewed life
    pending = RefreshRecord().predicted(AT, life=300.0, odds=0.5)
    assert pending.trust() == pytest.approx(1.0 / 1.5)
    second = pending.predicted(AT + 290.0, life=300.0, odds=0.5)
    assert second.pending == Pending(AT + 290.0, 300.0, 0.5)
    # 0.9 x 0.5 + 0.5 expected, nothing came
    assert second.trust() == pytest.approx(1.0 / (0.95 + 1.0))


def test_older_outcomes_fade() -> None:
    record = RefreshRecord()
    for i in range(3):
        record = record.predicted(AT + 1_000.0 * i, life=300.0, odds=0.5).settled(AT + 1_000.0 * i + 10.0)
    for i in range(3, 6):
        record = record.predicted(AT + 1_000.0 * i, life=300.0, odds=0.5).settled(AT + 1_000.0 * i + 900.0)
    # came: 0.9^3 x (1 + 0.9 + 0.81); expected: 0.5 x (1 + 0.9 + ... + 0.9^5)
    came = 0.729 * 2.71
    expected = 0.5 * sum(0.9**k for k in range(6))
    assert record.came == pytest.approx(came)
    assert record.trust() == pytest.approx((came + 1.0) / (expected + 1.0))


def test_a_chat_that_comes_back_more_than_forecast_at_most_doubles_its_odds() -> None:
    record = RefreshRecord()
    for i in range(10):
        record = record.predicted(AT + 1_000.0 * i, life=300.0, odds=0.1).settled(AT + 1_000.0 * i + 60.0)
    assert record.trust() == MAX_TRUST


def test_the_record_survives_its_json_form() -> None:
    settled = RefreshRecord().predicted(AT, life=300.0, odds=0.5).settled(AT + 10.0)
    pending = settled.predicted(AT + 500.0, life=3_600.0, odds=0.25, entry=(12, AT - 100.0))
    for record in (RefreshRecord(), settled, pending):
        assert RefreshRecord.from_json(record.to_json()) == record
    assert RefreshRecord.from_json(None) == RefreshRecord()
    # a record written before decisions named their entry still reads
    older = RefreshRecord.from_json([1.0, 0.5, AT, 300.0, 0.4])
    assert older.pending == Pending(AT, 300.0, 0.4)
    assert not older.pending.about(12, AT - 100.0)
