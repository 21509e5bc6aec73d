"""Many chats through the real process: 1,000 private Telegram chats x 5 messages pushed at once into
`python -m gateway run` (python-telegram-bot against the fake Bot API, the fake model answering at once,
Postgres). Reports messages per second from the first push until every message is stored and marked
answered, and checks what `tests/faults/test_load.py` checks at 200 chats: every message stored once and
in its chat's order, every chat answered, no model request mixing two chats.

Unlike `bench_throughput` (the pipeline in this process, handed messages directly), this includes the
Telegram adapter, long polling and the process's own start. The fakes share the 2 cores with it.

Run: `python -m bench.bench_many_chats` (about two minutes on a quiet 2-core VM; `--chats` to change the
size). Not in `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from bench.databases import DEFAULT_POSTGRES_URL, fresh_postgres
from tests.faults.many_chats import check_many_chats, run_many_chats

CHATS = 1000
PER_CHAT = 5
TIMEOUT_S = 600.0


async def run(*, pg_url: str = DEFAULT_POSTGRES_URL, chats: int = CHATS, per_chat: int = PER_CHAT) -> float:
    """Messages per second; raises AssertionError when a message was lost, repeated or reordered."""
    with tempfile.TemporaryDirectory(prefix="bench-many-chats-") as folder:
        async with fresh_postgres(pg_url) as url:
            result = await run_many_chats(
                url, Path(folder), chats=chats, per_chat=per_chat, timeout=TIMEOUT_S
            )
    check_many_chats(result)
    rate = result.messages / result.seconds
    print(
        f"many chats: {result.messages} messages in {chats} chats answered in {result.seconds:.1f} s -> "
        f"{rate:.0f} msg/s; {len(result.spans)} model requests; none lost, repeated or reordered",
        flush=True,
    )
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--chats", type=int, default=CHATS)
    parser.add_argument("--per-chat", type=int, default=PER_CHAT)
    args = parser.parse_args()
    asyncio.run(run(pg_url=args.postgres_url, chats=args.chats, per_chat=args.per_chat))


if __name__ == "__main__":
    main()
