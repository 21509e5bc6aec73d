"""Fleet leases on Postgres: one holder per name, visible with its worker's name, released when the
holder's connection ends, taken back after a reconnect."""

from __future__ import annotations

import pytest

from gateway.store.locks.leases import PostgresLeases
from tests.faults.conftest import query

pytestmark = pytest.mark.postgres


async def test_one_holder_per_lease_and_a_dead_holder_hands_over(empty_pg_url: str) -> None:
    a = PostgresLeases(empty_pg_url, worker="a")
    b = PostgresLeases(empty_pg_url, worker="b")
    observer = PostgresLeases(empty_pg_url, worker="doctor", member=False)
    try:
        assert await a.try_take("telegram:polling")
        assert not await b.try_take("telegram:polling")
        assert await b.try_take("discord:shard:2:1")
        assert await observer.holders(["telegram:polling", "discord:shard:2:1", "discord:shard:2:0"]) == {
            "telegram:polling": "a",
            "discord:shard:2:1": "b",
        }
        assert await observer.live_workers() == 2
        await a.close()  # the worker is gone: its connection, and every lease with it
        assert await b.try_take("telegram:polling")
        assert b.held == {"telegram:polling", "discord:shard:2:1"}
        assert await b.live_workers() == 1
    finally:
        for leases in (a, b, observer):
            await leases.close()


async def test_a_broken_lease_connection_takes_its_leases_back_or_reports_them_lost(
    empty_pg_url: str,
) -> None:
    a = PostgresLeases(empty_pg_url, worker="a")
    b = PostgresLeases(empty_pg_url, worker="b")
    try:
        assert await a.try_take("x")
        assert await a.try_take("y")
        kill = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :app"
        await query(empty_pg_url, kill, app="gateway-fleet:a")
        assert await b.try_take("y")  # a's connection died: y was free for a moment
        assert await a.check() == {"y"}  # the heartbeat reconnects: x taken back, y lost to b
        assert a.held == {"x"}
        assert not await b.try_take("x")
    finally:
        await a.close()
        await b.close()
