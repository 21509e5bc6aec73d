"""Hostile and malformed input: the corpus in `hostile_corpus.py` through the real process, plus the
2 MB console paste and malformed configuration values.

One gateway process on Postgres (which rejects NUL in text) serves every Telegram case, each in its
own chat; the process must survive all of them, store what each case says and answer as it says.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import ROOT, base_env, running_gateway
from tests.fakes.telegram import FakeTelegram
from tests.faults.hostile_corpus import ADMIN, BOT_ID, CASES, STRANGER, TOOL_RECALL, USER, Case
from tests.faults.load_support import TimedAnthropic, stored_messages, wait_until

TOKEN = f"{BOT_ID}:HOSTILE-token-abcdefghijklmnopqrstuvwxyz"

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def _chat_id(index: int, case: Case) -> int:
    group = case.update.get("chat_type") in ("group", "supergroup", "channel")
    return -(100_000 + index) if group else 100_000 + index


def _push(tg: FakeTelegram, chat_id: int, update: dict[str, Any]) -> None:
    kw = dict(update)
    if kw.get("sender_chat") == "this chat":
        kw["sender_chat"] = chat_id
    kw.setdefault("user_id", USER)
    text = kw.pop("text", "")
    tg.push_message(chat_id, text, **kw)


def _sent_to(tg: FakeTelegram, chat: int, after: int) -> Callable[[], bool]:
    return lambda: any(s.chat_id == chat for s in tg.sent[after:])


async def _quiet(tg: FakeTelegram, seconds: float = 1.0) -> None:
    """Wait until the bot has sent nothing new for `seconds`."""
    while True:
        count = len(tg.sent)
        await asyncio.sleep(seconds)
        if len(tg.sent) == count:
            return


async def test_hostile_corpus_through_telegram(tmp_path: Path, pg_url: str) -> None:
    assert len(CASES) >= 40
    chats = {case.name: _chat_id(i, case) for i, case in enumerate(CASES)}
    async with TimedAnthropic() as llm, FakeTelegram(token=TOKEN) as tg:
        env = base_env(
            database_url=pg_url,
            anthropic_url=llm.base_url,
            tmp=tmp_path,
            TELEGRAM_BOT_TOKEN=TOKEN,
            TELEGRAM_BASE_URL=tg.base_url,
            TELEGRAM_ALLOWED_USERS=f"{USER},{ADMIN}",
            TELEGRAM_ADMIN_IDS=str(ADMIN),
            LIMITS__USER_MESSAGES_PER_MINUTE="1000",
        )
        async with running_gateway(env, cwd=tmp_path) as gw:
            # Phase 1: earlier messages some cases build on (the original of an edit, a long message).
            for case in CASES:
                for extra in case.extra_updates:
                    _push(tg, chats[case.name], extra)

            async def extras_answered() -> bool:
                rows = await stored_messages(pg_url)
                return len(rows) >= 3 and all(r.replied for r in rows if r.needs_reply)

            await wait_until(extras_answered, timeout=30, what="the earlier messages answered")
            await _quiet(tg)
            before = {chat: sum(s.chat_id == chat for s in tg.sent) for chat in chats.values()}
            # Phase 2: every unscripted case at once, each in its own chat.
            plain = [c for c in CASES if c.script is None]
            for case in plain:
                _push(tg, chats[case.name], case.update)
            expected = sum(1 for c in plain if c.reply is not None)
            with contextlib.suppress(TimeoutError):  # a missing reply is reported per case below
                await tg.wait_for(lambda: len(tg.sent) >= sum(before.values()) + expected, timeout=20)
            await _quiet(tg)
            # Phase 3: cases that need a scripted model answer, one at a time.
            for case in (c for c in CASES if c.script is not None):
                chat = chats[case.name]
                if case.script == TOOL_RECALL:
                    rows = await stored_messages(pg_url)
                    long_id = next(r.id for r in rows if r.chat_id == str(chat) and r.text == "z" * 4096)
                    llm.script_reply(tool_uses=[{"name": "recall", "input": {"message_id": long_id}}])
                    llm.script_reply("done reading")
                else:
                    llm.script_reply(case.script)
                sent = len(tg.sent)
                _push(tg, chat, case.update)
                await tg.wait_for(_sent_to(tg, chat, sent), timeout=15)
                await _quiet(tg, 0.5)
            alive = gw.proc is not None and gw.proc.returncode is None
        logs = gw.log_text()

    assert alive, "the gateway process died"
    rows = await stored_messages(pg_url, platform="telegram")
    problems: list[str] = []
    for case in CASES:
        chat = chats[case.name]
        replies = [s.visible_text for s in tg.sent if s.chat_id == chat][before.get(chat, 0) :]
        extras = {e.get("text", "") for e in case.extra_updates}
        users = [r for r in rows if r.chat_id == str(chat) and r.role == "user" and r.text not in extras]
        if case.reply is None and replies:
            problems.append(f"{case.name}: expected silence, got {replies!r}"[:300])
        if case.reply is not None and not any(case.reply in r for r in replies):
            problems.append(f"{case.name}: no reply containing {case.reply!r}; got {replies!r}"[:300])
        if len(replies) > case.max_sent:
            problems.append(f"{case.name}: {len(replies)} messages sent")
        for absent in case.reply_absent:
            if any(absent in r for r in replies):
                problems.append(f"{case.name}: reply contains {absent!r}")
        if case.stored is None and users:
            problems.append(f"{case.name}: expected nothing stored, got {[u.text[:80] for u in users]!r}")
        if case.stored is not None and not any(case.stored in u.text for u in users):
            problems.append(f"{case.name}: no stored row containing {case.stored[:60]!r}")
    errors = [line for line in logs.splitlines() if " ERROR " in line or " WARNING " in line]
    assert problems == [], "\n".join(problems + errors)

    # Telegram HTML stayed valid: every send was accepted on the first attempt (no plain-text re-send).
    assert len(tg.called("sendMessage")) == len(tg.sent)
    assert all(s.parse_mode == "HTML" for s in tg.sent)
    # The stranger is told once; later messages from them are not answered again.
    stranger = [s for s in tg.sent if s.chat_id == chats["stranger in a private chat"]]
    assert len(stranger) == 1
    assert str(STRANGER) in stranger[0].visible_text
    # The recalled 4,096-char message reached the model as a bounded, tagged excerpt.
    tool_results = [
        block
        for span in llm.reply_spans()
        for message in span.record.body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert tool_results, "the recall tool ran"
    result_text = str(tool_results[0]["content"])
    assert "<recalled" in result_text
    assert len(result_text) < 6000
    # Every user message that needed an answer got one; nothing was left pending.
    assert [r.text[:40] for r in rows if r.needs_reply and not r.replied] == []
    assert "Traceback" not in logs
    assert "Task exception was never retrieved" not in logs
    gw.assert_no_secret(TOKEN, "test-key")


async def test_two_megabyte_console_paste_is_stored_and_answered(tmp_path: Path, sqlite_url: str) -> None:
    """`python -m gateway chat` with a 2 MB line on stdin: stored whole, the turn completes, then Ctrl-D."""
    paste = ("lorem ipsum dolor sit amet " * 80_000)[: 2 * 1024 * 1024]
    async with TimedAnthropic() as llm:
        env = {**os.environ, **base_env(database_url=sqlite_url, anthropic_url=llm.base_url, tmp=tmp_path)}
        env["PYTHONPATH"] = str(ROOT)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gateway",
            "chat",
            cwd=tmp_path,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            limit=8 * 1024 * 1024,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(paste.encode() + b"\nsecond line\n")
        await proc.stdin.drain()

        async def answered() -> bool:
            users = [r for r in await stored_messages(sqlite_url) if r.role == "user"]
            return len(users) == 2 and all(r.replied for r in users)

        await wait_until(answered, timeout=60, what="both console lines answered")
        proc.stdin.close()
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
    text = out.decode("utf-8", "replace")
    assert proc.returncode == 0, text[-2000:]
    users = [r for r in await stored_messages(sqlite_url) if r.role == "user"]
    assert len(users[0].text) == len(paste.rstrip()), "the paste was stored whole"
    assert "bot> " in text
    assert "Traceback" not in text
    # The conversation stays readable: the log file is named once and log lines go there, not here.
    assert text.count("(logs: ") == 1
    assert f"(logs: {tmp_path / 'gateway-chat.log'})" in text
    assert " INFO " not in text
    assert " INFO gateway" in (tmp_path / "gateway-chat.log").read_text(encoding="utf-8")


BAD_CONFIG = [
    ("COMPRESSION__THRESHOLD", "1.5", "compression.threshold"),
    ("COMPRESSION__THRESHOLD", "half", "compression.threshold"),
    ("TELEGRAM_ADMIN_IDS", "12,abc", "telegram_admin_ids"),
    ("DATABASE_URL", "mysql://root@localhost/db", "database_url"),
    ("LOG_LEVEL", "LOUD", "log_level"),
    ("PROMPT_CACHING__CACHE_TTL", "2h", "prompt_caching.cache_ttl"),
    ("TELEGRAM_WEBHOOK_PORT", "70000", "telegram_webhook_port"),
    ("ANTHROPIC_BASE_URL", "not a url", "anthropic_base_url"),
    ("LIMITS__USER_MESSAGES_PER_MINUTE", "-3", "limits.user_messages_per_minute"),
    ("COMPRESSION", "{not json", "compression"),
]


@pytest.mark.parametrize("command", ["doctor", "run"])
@pytest.mark.parametrize(("key", "value", "named"), BAD_CONFIG, ids=[f"{k}={v}" for k, v, _ in BAD_CONFIG])
async def test_malformed_configuration_is_one_line_and_exit_2(
    tmp_path: Path, command: str, key: str, value: str, named: str
) -> None:
    secret = "sk-ant-hostile-secret-000"
    env = {
        k: v for k, v in os.environ.items() if not k.upper().startswith(("TELEGRAM", "ANTHROPIC", "DATABASE"))
    }
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "ANTHROPIC_API_KEY": secret,
            "TELEGRAM_BOT_TOKEN": "1:" + secret,
            key: value,
        }
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gateway",
        command,
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert proc.returncode == 2
    assert len(lines) == 1, lines
    assert named in lines[0]
    assert "Traceback" not in lines[0]
    assert secret not in out.decode() + err.decode()
