"""Voice-note latency: from a voice note's arrival to the model request that answers it, when the
speech-to-text endpoint takes 2 s, next to a text message's; and a group's voice chatter followed at once
by a mention (the mention waits for the chatter to be heard, as it should: its turn needs those words).

The real gateway process runs against the Telegram, Anthropic and transcription fakes; three chats of
each kind are asked at once. Run: `python -m bench.bench_voice` (about 20 s).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from gateway.store.migrate import upgrade_async
from tests.e2e.harness import GatewayProcess, base_env
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.telegram import FakeTelegram
from tests.fakes.transcription import FakeTranscription

TRANSCRIPTION_S = 2.0
CHATS = 3
TG_TOKEN = "123456:BENCH-token-abcdefghijklmnopqrstuvwxyz"
USER = 42
VOICE_CHATS = [6001 + i for i in range(CHATS)]
TEXT_CHATS = [6101 + i for i in range(CHATS)]
GROUPS = [-1006201 - i for i in range(CHATS)]
WARM_CHAT = 6300


def _request_at(llm: FakeAnthropic, marker: str) -> float | None:
    for record in llm.requests:
        if record.kind == "reply" and marker in json.dumps(record.body):
            return record.at
    return None


async def _connected(tg: FakeTelegram, gw: GatewayProcess) -> None:
    deadline = time.monotonic() + 60
    while not tg.called("getUpdates"):
        if time.monotonic() > deadline:
            raise AssertionError(f"the gateway did not connect:\n{gw.log_text()[-3000:]}")
        await asyncio.sleep(0.1)


async def measure(tmp: Path) -> dict[str, list[float]]:
    url = f"sqlite+aiosqlite:///{tmp / 'voice.db'}"
    await upgrade_async(url)
    async with (
        FakeAnthropic() as llm,
        FakeTelegram(token=TG_TOKEN, username="bench_bot") as tg,
        FakeTranscription() as stt,
    ):
        stt.delay_s = TRANSCRIPTION_S
        env = base_env(
            database_url=url,
            anthropic_url=llm.base_url,
            tmp=tmp,
            TELEGRAM_BOT_TOKEN=TG_TOKEN,
            TELEGRAM_BASE_URL=tg.base_url,
            TELEGRAM_BASE_FILE_URL=tg.base_file_url,
            TELEGRAM_ALLOWED_USERS=f"{USER},{USER + 1}",
            LOG_LEVEL="WARNING",
            TRANSCRIPTION__PROVIDER="openai",
            TRANSCRIPTION__BASE_URL=stt.url,
            TRANSCRIPTION__API_KEY=stt.api_key or "",
            TRANSCRIPTION__MODEL="whisper-1",
        )
        gw = GatewayProcess(env, cwd=tmp)
        await gw.start(ready=None)
        asked: dict[str, float] = {}
        try:
            await _connected(tg, gw)
            # Warm up (first connections to the database and the fakes) before anything is timed.
            warm = f"{WARM_CHAT}"
            sound = b"OggS warm" + bytes(2000)
            tg.push_voice(WARM_CHAT, data=sound, seconds=1, user_id=USER)
            tg.push_message(WARM_CHAT, f"warm up w{warm}x", user_id=USER)
            deadline = time.monotonic() + 30
            while _request_at(llm, f"w{warm}x") is None:
                if time.monotonic() > deadline:
                    raise AssertionError(f"the warm-up was not answered:\n{gw.log_text()[-3000:]}")
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            for i, chat in enumerate(VOICE_CHATS):
                sound = f"OggS voice {i}".encode() + bytes(2000)
                stt.say(sound, f"voice question v{i}x")
                asked[f"v{i}x"] = time.monotonic()
                tg.push_voice(chat, data=sound, seconds=5, user_id=USER)
            for i, chat in enumerate(TEXT_CHATS):
                asked[f"t{i}x"] = time.monotonic()
                tg.push_message(chat, f"text question t{i}x", user_id=USER)
            for i, chat in enumerate(GROUPS):
                sound = f"OggS group {i}".encode() + bytes(2000)
                stt.say(sound, f"group chatter g{i}c")
                group: dict[str, Any] = {"chat_type": "supergroup", "chat_title": f"team {i}"}
                asked[f"g{i}x"] = time.monotonic()
                tg.push_voice(chat, data=sound, seconds=5, user_id=USER + 1, first_name="Bob", **group)
                tg.push_message(chat, f"@bench_bot what did Bob say? g{i}x", user_id=USER, **group)
            deadline = time.monotonic() + 60
            while any(_request_at(llm, m) is None for m in asked):
                if time.monotonic() > deadline:
                    raise AssertionError(f"not every request arrived:\n{gw.log_text()[-3000:]}")
                await asyncio.sleep(0.05)
            for i in range(CHATS):
                assert f"group chatter g{i}c" in json.dumps(
                    [r.body for r in llm.requests if f"g{i}x" in json.dumps(r.body)]
                ), "the mention's request carries the chatter's transcript"
        finally:
            await gw.stop()
    return {
        kind: [_request_at(llm, m) - asked[m] for m in asked if m[0] == key]  # type: ignore[operator]
        for kind, key in (
            ("voice note (private)", "v"),
            ("text (private)", "t"),
            ("group chatter + mention", "g"),
        )
    }


async def run() -> dict[str, float]:
    print(
        f"== voice notes: arrival -> model request, transcription takes {TRANSCRIPTION_S:.0f} s, "
        f"{CHATS} chats of each kind at once =="
    )
    with tempfile.TemporaryDirectory() as tmp:
        results = await measure(Path(tmp))
    medians = {kind: statistics.median(values) for kind, values in results.items()}
    print(f"{'message':<26} {'p50':>7} {'max':>7} {'beyond transcription':>21}")
    for kind, values in results.items():
        beyond = medians[kind] - (TRANSCRIPTION_S if kind != "text (private)" else 0.0)
        print(f"{kind:<26} {medians[kind]:>6.2f}s {max(values):>6.2f}s {beyond:>20.2f}s")
    return medians


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
