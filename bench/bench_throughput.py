"""Throughput: 500 chats x 10 messages arriving at once, through the whole pipeline, on Postgres, with an
instant in-process LLM. Reports messages per second (arrival of the first to the last reply) and the
process's peak resident memory.

Run: `python -m bench.bench_throughput`. Each chat's messages are handed over in order, one after the
other (as the Telegram and Discord adapters do per chat), all chats concurrently. Target: >= 300 msg/s.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time
from datetime import UTC, datetime

from bench.databases import DEFAULT_POSTGRES_URL, fresh_postgres
from bench.instant import InstantLLM
from bench.replay import bench_settings
from gateway.app.gateway import Gateway
from gateway.store import Store
from tests.support.memory_adapter import DirectMemoryAdapter, chat_ref, incoming

CHATS = 500
PER_CHAT = 10
TARGET_MSG_S = 300.0


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


async def _chat(adapter: DirectMemoryAdapter, index: int, per_chat: int) -> None:
    chat = chat_ref(f"c{index}", group=False)
    for k in range(per_chat):
        await adapter.deliver(
            incoming(
                chat, user_id=f"u{index}", name=f"User {index}", text=f"message {k} from chat {index}",
                message_id=f"c{index}-{k}", sent_at=datetime.now(UTC),
            )
        )  # fmt: skip


async def run(
    *, pg_url: str = DEFAULT_POSTGRES_URL, chats: int = CHATS, per_chat: int = PER_CHAT
) -> dict[str, float]:
    async with fresh_postgres(pg_url) as url:
        settings = bench_settings(url, "http://127.0.0.1:9", scheduler={"enabled": False})
        store = await Store.open(
            url, pool_size=settings.database_pool_size, max_overflow=settings.database_max_overflow
        )
        llm = InstantLLM()
        adapter = DirectMemoryAdapter()
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
        try:
            await gateway.start()
            rss_before = _peak_rss_mib()
            started = time.perf_counter()
            await asyncio.gather(*(_chat(adapter, i, per_chat) for i in range(chats)))
            stored_at = time.perf_counter()
            await gateway.tasks.drain()
            finished = time.perf_counter()
        finally:
            await gateway.stop()
            await store.close()
    total = chats * per_chat
    answered = {m.reply_to_message_id for m in adapter.sent}
    result = {
        "messages": float(total),
        "llm_calls": float(len(llm.requested_at)),
        "replies": float(len(adapter.sent)),
        "seconds": finished - started,
        "msg_per_s": total / (finished - started),
        "stored_msg_per_s": total / (stored_at - started),
        "peak_rss_mib": _peak_rss_mib(),
        "rss_before_mib": rss_before,
    }
    print(
        f"throughput: {total} messages in {chats} chats, {result['seconds']:.2f} s -> "
        f"{result['msg_per_s']:.0f} msg/s (all stored after {stored_at - started:.2f} s); "
        f"{len(llm.requested_at)} LLM calls, {len(adapter.sent)} replies covering {len(answered)} messages; "
        f"peak RSS {result['peak_rss_mib']:.0f} MiB (before the run {rss_before:.0f} MiB)",
        flush=True,
    )
    print(f"target: >= {TARGET_MSG_S:.0f} msg/s")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--chats", type=int, default=CHATS)
    args = parser.parse_args()
    asyncio.run(run(pg_url=args.postgres_url, chats=args.chats))


if __name__ == "__main__":
    main()
