"""Several gateway processes on one Postgres as a fleet: started together, one Telegram poller with a
standby, Discord shards spread over the workers, and a webhook that refuses forged updates.

Lease timings are short here (settings); production defaults are seconds.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.discord import FakeDiscord
from tests.fakes.telegram import FakeTelegram
from tests.faults.load_support import MARKER, TimedAnthropic, stored_messages, wait_until
from tests.support.ports import free_port

TOKEN = "123456:FLEET-token-abcdefghijklmnopqrstuvwxyz"
SECRET = "fleet-secret-0123456789"
DC_TOKEN = "fleet-discord-token"
FAST = {
    "FLEET__LEASE_CHECK_S": "0.3",
    "FLEET__STANDBY_RETRY_S": "0.3",
    "FLEET__REBALANCE_S": "0.3",
    "GATEWAY_ALLOW_ALL_USERS": "true",
    "LIMITS__USER_MESSAGES_PER_MINUTE": "10000",
}

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _worker(tmp_path: Path, i: int, pg_url: str, llm_url: str, **extra: str) -> GatewayProcess:
    cwd = tmp_path / f"w{i}"
    cwd.mkdir()
    env = base_env(database_url=pg_url, anthropic_url=llm_url, tmp=cwd, **FAST, **extra)
    env["FLEET__WORKER_NAME"] = f"w{i}"
    return GatewayProcess(env, cwd=cwd)


def _answered(texts: list[str]) -> Counter[str]:
    return Counter(m.group(0) for t in texts for m in MARKER.finditer(t))


async def test_webhook_workers_started_together_both_come_up(tmp_path: Path, pg_url: str) -> None:
    ports = [free_port(), free_port()]
    public_url = f"http://127.0.0.1:{ports[0]}/tg-hook"  # the balancer's address, the same for both
    async with TimedAnthropic(reply_delay=0.05) as llm, FakeTelegram(token=TOKEN) as tg:
        workers = [
            _worker(
                tmp_path,
                i,
                pg_url,
                llm.base_url,
                TELEGRAM_BOT_TOKEN=TOKEN,
                TELEGRAM_BASE_URL=tg.base_url,
                TELEGRAM_WEBHOOK_URL=public_url,
                TELEGRAM_WEBHOOK_LISTEN="127.0.0.1",
                TELEGRAM_WEBHOOK_PORT=str(port),
                TELEGRAM_WEBHOOK_SECRET=SECRET,
            )
            for i, port in enumerate(ports)
        ]
        try:
            await asyncio.gather(*(w.start() for w in workers))
            own = [f"http://127.0.0.1:{p}/tg-hook" for p in ports]
            forged = tg.push_message(999, "c999m0 forged", user_id=999)
            assert await tg.deliver_webhook(own[1], forged, "wrong-secret") == 403
            assert await tg.deliver_webhook(own[0], forged) == 403
            for c in (1, 2):
                update = tg.push_message(c, f"c{c}m0", user_id=c)
                assert await tg.deliver_webhook(own[c - 1], update, SECRET) == 200
            await tg.wait_for(lambda: len(_answered([s.visible_text for s in tg.sent])) == 2, timeout=30)
        finally:
            codes = await asyncio.gather(*(w.stop() for w in workers))
    assert codes == [0, 0]
    for w in workers:
        assert re.search(r"telegram: connected as @\w+ \(webhook", w.log_text()), w.log_text()
        assert "Traceback" not in w.log_text()
        w.assert_no_secret(TOKEN, SECRET)
    assert len(tg.called("setWebhook")) == 1, "the second worker changed a webhook already in place"
    assert "999" not in {r.chat_id for r in await stored_messages(pg_url)}, "a forged update was stored"


async def test_webhook_url_without_secret_stops_the_start(tmp_path: Path, pg_url: str) -> None:
    env = base_env(
        database_url=pg_url,
        anthropic_url="http://127.0.0.1:9",
        tmp=tmp_path,
        TELEGRAM_BOT_TOKEN=TOKEN,
        TELEGRAM_WEBHOOK_URL="https://bot.example.org/tg-hook",
    )
    gw = GatewayProcess(env, cwd=tmp_path)
    await gw.start(ready=None)
    assert gw.proc is not None
    assert await asyncio.wait_for(gw.proc.wait(), 30) == 2
    await gw.stop()
    lines = [line for line in gw.log_text().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "TELEGRAM_WEBHOOK_SECRET" in lines[0]


async def test_polling_standby_takes_over_when_the_poller_dies(tmp_path: Path, pg_url: str) -> None:
    async with TimedAnthropic(reply_delay=0.05) as llm, FakeTelegram(token=TOKEN) as tg:
        extra = {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_BASE_URL": tg.base_url}
        first, second = (_worker(tmp_path, i, pg_url, llm.base_url, **extra) for i in range(2))
        try:
            await first.start()
            await first.wait_log(r"telegram: this worker \(w0\) polls")
            await second.start()
            await second.wait_log(r"telegram: standing by; w0 polls")
            for c in range(1, 5):
                tg.push_message(c, f"c{c}m0", user_id=c)
            await tg.wait_for(lambda: len(_answered([s.visible_text for s in tg.sent])) == 4, timeout=30)
            assert tg.conflicts == 0, "two workers polled at once"
            assert "polls" not in second.log_text().replace("w0 polls", "")

            # The poller dies holding updates it fetched but never confirmed.
            def kill_first(_ids: list[int]) -> None:
                tg.on_updates_sent = None
                assert first.proc is not None
                first.proc.kill()

            tg.on_updates_sent = kill_first
            for c in range(1, 5):
                tg.push_message(c, f"c{c}m1", user_id=c)
            await first.kill()
            await second.wait_log(r"telegram: this worker \(w1\) polls", timeout=15)
            for c in range(1, 5):
                tg.push_message(c, f"c{c}m2", user_id=c)

            async def all_answered() -> bool:
                users = [r for r in await stored_messages(pg_url) if r.role == "user"]
                return len(users) == 12 and all(r.replied for r in users)

            await wait_until(all_answered, timeout=40, what="every message stored and answered")
            await asyncio.sleep(0.5)  # a second answer would show up now
        finally:
            await second.stop()
            await first.stop()
    users = [r for r in await stored_messages(pg_url) if r.role == "user"]
    assert sorted(r.text for r in users) == sorted(f"c{c}m{n}" for c in range(1, 5) for n in range(3))
    answered = _answered([s.visible_text for s in tg.sent])
    assert set(answered) == {f"c{c}m{n}" for c in range(1, 5) for n in range(3)}
    assert {k: v for k, v in answered.items() if v > 1} == {}, "a message was answered twice"
    assert "Traceback" not in second.log_text()


def _guild_on_shard(shard: int, count: int = 2) -> int:
    """A guild id Discord routes to `shard` of `count` (`(guild_id >> 22) % count`)."""
    return ((1000 * count + shard) << 22) | 12345


async def test_discord_shards_spread_and_move_when_a_worker_dies(tmp_path: Path, pg_url: str) -> None:
    guilds = {shard: _guild_on_shard(shard) for shard in (0, 1)}
    channels = {shard: 500 + shard for shard in (0, 1)}
    async with TimedAnthropic(reply_delay=0.05) as llm, FakeDiscord(token=DC_TOKEN) as dc:
        for shard, guild in guilds.items():
            dc.add_guild(guild, f"g{shard}", channels=[(channels[shard], "general")])
        extra = {
            "DISCORD_BOT_TOKEN": DC_TOKEN,
            "DISCORD_API_BASE_URL": dc.api_base,
            "DISCORD_GATEWAY_URL": dc.gateway_url,
            "DISCORD__SHARD_COUNT": "2",
            "DISCORD__IDENTIFY_INTERVAL_S": "0.2",
        }
        workers = [_worker(tmp_path, i, pg_url, llm.base_url, **extra) for i in range(2)]
        try:
            await asyncio.gather(*(w.start() for w in workers))

            async def both_shards() -> bool:
                return dc.gateway.connected_shards() == [0, 1]

            await wait_until(both_shards, timeout=20, what="shards 0 and 1 connected")
            await asyncio.sleep(1.0)  # a rebalance that moved a shard twice would show now
            assert dc.gateway.connected_shards() == [0, 1]
            held = [re.findall(r"connected shard (\d) of 2", w.log_text()) for w in workers]
            assert sorted(len(h) for h in held) == [1, 1], held

            async def say(n: int) -> None:
                for shard in (0, 1):
                    dc.push_message(
                        channels[shard],
                        f"c{shard + 1}m{n}",
                        author_id=7,
                        username="ann",
                        guild_id=guilds[shard],
                        mentions_bot=True,
                    )
                await dc.wait_for(
                    lambda: {f"c1m{n}", f"c2m{n}"} <= set(_answered([m.content for m in dc.sent])), timeout=30
                )

            await say(0)
            await workers[0].kill()

            async def survivor_holds_both() -> bool:
                held = set(re.findall(r"connected shard (\d) of 2", workers[1].log_text()))
                return held == {"0", "1"} and dc.gateway.connected_shards() == [0, 1]

            await wait_until(survivor_holds_both, timeout=30, what="the survivor to connect both shards")
            await say(1)
            await asyncio.sleep(0.5)
        finally:
            await asyncio.gather(*(w.stop() for w in workers))
    answered = _answered([m.content for m in dc.sent])
    assert answered == Counter({f"c{s}m{n}": 1 for s in (1, 2) for n in (0, 1)}), answered
    shards = [d["shard"] for d in dc.identifies]
    assert all(s[1] == 2 for s in shards), shards
    assert "Traceback" not in workers[1].log_text()
