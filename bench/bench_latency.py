"""Latency of a reply as people see it, streaming on and off: from the update's arrival to the first
visible text and to the complete final message, on Telegram private chats, Telegram groups and Discord,
plus the platform API calls one reply costs.

The real gateway process runs against the protocol fakes; the fake model writes like a real one (first
token after 0.8 s, then 60 tokens/s: the fake's small default thinking, 16 tokens at the API's default
effort, then 800-token replies). "After the model's first token" counts from its first text token.
Each mode answers three chats per platform at once. Run: `python -m bench.bench_latency` (about a
minute). What the effort level does to these times: `bench.bench_effort`.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gateway.store.migrate import upgrade_async
from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic, Pacing
from tests.fakes.anthropic.tokens import BYTES_PER_TOKEN
from tests.fakes.discord import FakeDiscord
from tests.fakes.telegram import FakeTelegram

FIRST_TOKEN_S = 0.8
TOKENS_PER_S = 60.0
REPLY_TOKENS = 800
CHATS_PER_PLATFORM = 3
TG_TOKEN = "123456:BENCH-token-abcdefghijklmnopqrstuvwxyz"
DC_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDA5.bench.discord-bot-token"
USER = 42
TG_PRIVATE = [5001 + i for i in range(CHATS_PER_PLATFORM)]
TG_GROUPS = [-1005001 - i for i in range(CHATS_PER_PLATFORM)]
DC_DMS = [9501 + i for i in range(CHATS_PER_PLATFORM)]


def reply_text() -> str:
    line = "The answer goes on with another sentence of ordinary length and words."
    lines: list[str] = []
    while len("\n".join(lines).encode()) < REPLY_TOKENS * BYTES_PER_TOKEN:
        lines.append(f"{len(lines) + 1}. {line}")
    return "\n".join(lines)


@dataclass
class Sample:
    first_visible_s: float
    after_first_token_s: float
    final_s: float
    calls: int


@dataclass
class World:
    llm: FakeAnthropic
    tg: FakeTelegram
    dc: FakeDiscord
    reply: str
    asked: dict[str, float]


def _first_token_at(world: World, marker: str) -> float:
    """When the model began writing the reply's text: its first token's wait and its thinking after
    the request arrived."""
    for record in world.llm.requests:
        if marker in json.dumps(record.body):
            thinking = record.paced.thinking_s if record.paced is not None else 0.0
            return record.at + FIRST_TOKEN_S + thinking
    raise AssertionError(f"no model request for {marker}")


def _squash(text: str) -> str:
    return "".join(text.split())


def _final_at(entries: list[tuple[int, str, float]], reply: str) -> float | None:
    """When the chat first showed the whole reply: each message's latest text (edits replace it), in
    the order the messages appeared, joined (a reply over the length limit spans messages)."""
    latest: dict[int, str] = {}
    want = _squash(reply)
    for message_id, text, at in sorted(entries, key=lambda e: e[2]):
        latest[message_id] = text
        if _squash("".join(latest.values())) == want:
            return at
    return None


def _telegram_entries(world: World, chat_id: int) -> list[tuple[int, str, float]]:
    return [(s.message_id, s.visible_text, s.at) for s in world.tg.sent if s.chat_id == chat_id]


def _discord_entries(world: World, channel_id: int) -> list[tuple[int, str, float]]:
    return [(s.message_id, s.content, s.at) for s in world.dc.sent if s.channel_id == channel_id]


def _telegram_sample(world: World, chat_id: int, marker: str) -> Sample:
    asked = world.asked[marker]
    drafts = [d.at for d in world.tg.drafts if d.chat_id == chat_id and d.visible_text]
    sent = [s for s in world.tg.sent if s.chat_id == chat_id]
    final = _final_at(_telegram_entries(world, chat_id), world.reply)
    assert final is not None
    first = min([*drafts, *(s.at for s in sent)])
    calls = sum(1 for _, params in world.tg.requests if str(params.get("chat_id")) == str(chat_id))
    return Sample(first - asked, first - _first_token_at(world, marker), final - asked, calls)


def _discord_sample(world: World, channel_id: int, marker: str) -> Sample:
    asked = world.asked[marker]
    sent = [s for s in world.dc.sent if s.channel_id == channel_id]
    final = _final_at(_discord_entries(world, channel_id), world.reply)
    assert final is not None
    typing = sum(1 for c in world.dc.typing_calls if c == channel_id)
    first = sent[0].at
    return Sample(first - asked, first - _first_token_at(world, marker), final - asked, len(sent) + typing)


async def _ask_everyone(world: World) -> None:
    for i, chat in enumerate(TG_PRIVATE):
        marker = f"private-{i}"
        world.asked[marker] = time.monotonic()
        world.tg.push_message(chat, f"question {marker}", user_id=USER)
    for i, chat in enumerate(TG_GROUPS):
        marker = f"group-{i}"
        world.asked[marker] = time.monotonic()
        text = f"@bench_bot question {marker}"
        world.tg.push_message(chat, text, user_id=USER, chat_type="supergroup", chat_title=f"team {i}")
    for i, channel in enumerate(DC_DMS):
        marker = f"discord-{i}"
        world.asked[marker] = time.monotonic()
        world.dc.push_message(channel, f"question {marker}", author_id=USER, username="ann")


def _done(world: World) -> bool:
    telegram = [_final_at(_telegram_entries(world, c), world.reply) for c in (*TG_PRIVATE, *TG_GROUPS)]
    discord = [_final_at(_discord_entries(world, c), world.reply) for c in DC_DMS]
    return all(at is not None for at in (*telegram, *discord))


CONNECT_WITHIN_S = 60.0


async def _connected(tg: FakeTelegram, dc: FakeDiscord, gw: GatewayProcess) -> None:
    """Until the gateway polls Telegram and holds a Discord session: a Discord message pushed before
    that reaches nobody (the fake, like Discord, sends events only to connected sessions)."""
    started = time.monotonic()
    deadline = started + CONNECT_WITHIN_S
    while not (dc.gateway.has_sessions and tg.called("getUpdates")):
        if time.monotonic() > deadline:
            log = gw.log_text()[-3000:]
            raise AssertionError(f"the gateway did not connect within {CONNECT_WITHIN_S:.0f} s:\n{log}")
        await asyncio.sleep(0.1)
    print(f"latency: gateway connected to both platforms {time.monotonic() - started:.1f} s after start")
    await asyncio.sleep(1.0)  # the client handles READY and the guilds before the first message


async def run_mode(streaming: bool, tmp: Path) -> dict[str, list[Sample]]:
    reply = reply_text()
    db = tmp / f"latency-{streaming}.db"
    url = f"sqlite+aiosqlite:///{db}"
    await upgrade_async(url)
    pacing = Pacing(first_token_s=FIRST_TOKEN_S, tokens_per_s=TOKENS_PER_S)
    async with (
        FakeAnthropic(pacing=pacing) as llm,
        FakeTelegram(token=TG_TOKEN, username="bench_bot") as tg,
        FakeDiscord(token=DC_TOKEN) as dc,
    ):
        env = base_env(
            database_url=url,
            anthropic_url=llm.base_url,
            tmp=tmp,
            TELEGRAM_BOT_TOKEN=TG_TOKEN,
            TELEGRAM_BASE_URL=tg.base_url,
            TELEGRAM_ALLOWED_USERS=str(USER),
            DISCORD_BOT_TOKEN=DC_TOKEN,
            DISCORD_API_BASE_URL=dc.api_base,
            DISCORD_GATEWAY_URL=dc.gateway_url,
            DISCORD_ALLOWED_USERS=str(USER),
            LOG_LEVEL="WARNING",
            STREAMING__ENABLED="true" if streaming else "false",
        )
        gw = GatewayProcess(env, cwd=tmp)
        await gw.start(ready=None)
        try:
            await _connected(tg, dc, gw)
            for _ in range(3 * CHATS_PER_PLATFORM):
                llm.script_reply(reply)
            world = World(llm, tg, dc, reply, {})
            await _ask_everyone(world)
            deadline = time.monotonic() + 60
            while not _done(world) and time.monotonic() < deadline:  # noqa: ASYNC110 - three fakes to watch
                await asyncio.sleep(0.1)
            if not _done(world):
                raise AssertionError(f"not every reply arrived:\n{gw.log_text()[-3000:]}")
        finally:
            await gw.stop()
        return {
            "Telegram private": [
                _telegram_sample(world, c, f"private-{i}") for i, c in enumerate(TG_PRIVATE)
            ],
            "Telegram group": [_telegram_sample(world, c, f"group-{i}") for i, c in enumerate(TG_GROUPS)],
            "Discord DM": [_discord_sample(world, c, f"discord-{i}") for i, c in enumerate(DC_DMS)],
        }


def _p50(values: list[float]) -> float:
    return statistics.median(values)


async def run() -> None:
    print(
        f"== reply latency: model first token {FIRST_TOKEN_S} s, {TOKENS_PER_S:.0f} tokens/s, "
        f"{REPLY_TOKENS}-token replies, {CHATS_PER_PLATFORM} chats per platform at once =="
    )
    with tempfile.TemporaryDirectory() as tmp:
        results = {mode: await run_mode(mode, Path(tmp)) for mode in (True, False)}
    print(
        f"{'platform':<18} {'streaming':>9} {'first text p50':>15} {'- first token':>14} "
        f"{'final p50':>10} {'calls/reply':>12}"
    )
    for platform in results[True]:
        for mode in (True, False):
            samples = results[mode][platform]
            print(
                f"{platform:<18} {'on' if mode else 'off':>9} "
                f"{_p50([s.first_visible_s for s in samples]):>14.2f}s "
                f"{_p50([s.after_first_token_s for s in samples]):>13.2f}s "
                f"{_p50([s.final_s for s in samples]):>9.2f}s "
                f"{_p50([float(s.calls) for s in samples]):>12.0f}"
            )


if __name__ == "__main__":
    asyncio.run(run())
