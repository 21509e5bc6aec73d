"""Database load of the background jobs' scans at 1,000 and 10,000 idle sessions, SQLite and Postgres.

Run: `python -m bench.bench_job_scans` (`--sizes 1000,10000`, `--db sqlite,postgres`, `--scans N`).
Every chat is an idle session: four messages of 20-150 words, its last reply call recorded with the prompt
size the API would have reported (the system prompt and the messages for most, tens of thousands of
tokens for a fifth, 62-80% of the planned window, above the proactive share, for ABOVE_SHARE of them),
its last activity between 35 minutes and two days ago, a fifth of them groups. A tenth wait for a
keep-alive look later in the hour; DUE_LOOKS (the same number at every size) are due now. The first
API_CHATS chats are written through the store's own API (`get_or_create_chat`, `active_session`,
`append_messages`, `record_call`, `set_cache_look`); the others copy the rows it wrote for one of them, a
thousand per statement, with their own times, kind, texts, token counts, prompt and look (the store's API
writes one chat in four transactions, which at 10,000 chats would make the run minutes long). The first
size is seeded, measured, then the database grows to the next size and is measured again.

Each scan is timed as the gateway's scheduler calls it, on the job bodies `standard_jobs` builds (the
same ones `Gateway._start_scheduler` adds), with a `Gateway` built on the database (not started: no
scheduler of its own, no adapter):

- idle selection: the candidate query of the idle-compaction body (`Store.idle_sessions` with the body's
  own arguments), while the sessions above the proactive share are still untried, so it finds a full
  batch;
- idle job: the whole idle-compaction body once every session above its floor was tried this idle spell
  (an aborted scheduled attempt recorded for each, as a running scheduler leaves it): the steady state,
  in which a scan finds nothing;
- keep-alive, 0 due: the keep-alive body (`CacheKeeper.run`) when no look is due (the tenth with a live
  entry wait for later ones): its scan alone;
- keep-alive, DUE_LOOKS due: the same body with DUE_LOOKS looks due; each ends in a let-go (the seeded
  sessions hold no cache entry): the chat lock, the session's snapshot read and one update. The looks
  are set due again between scans, outside the timing;
- usage rollup: the rollup body (`rollup_usage`: yesterday and today from `llm_calls`, upserted into
  `usage_daily`).

Per scan: median wall ms over `--scans` scans (after one untimed warm-up) and the SQL statements sent,
counted with SQLAlchemy's `before_cursor_execute` event on every engine (SQLite's `BEGIN IMMEDIATE` not
counted). Commits are flushed to disk while scans run, as in production; the seeding turns that off
(Postgres `synchronous_commit`, SQLite `synchronous`) to keep the run short.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine, bindparam, event, select, text, update

from agent.llm import AnthropicClient
from agent.tokens import estimate_message
from bench.databases import DEFAULT_POSTGRES_URL, fresh_database
from bench.replay import API_KEY, bench_settings
from bench.seeding import _text
from gateway.app.gateway import Gateway
from gateway.errors import StoreError
from gateway.jobs.maintenance import IDLE_BATCH, standard_jobs
from gateway.jobs.scheduler import JobBody
from gateway.store import CallRecord, NewMessage, Store
from gateway.store.rows import chats, llm_calls, messages, sessions
from tests.fakes.anthropic import FakeAnthropic

NOW = datetime(2026, 12, 7, 15, 0, tzinfo=UTC)
"""The time every scan runs at (the store's and the gateway's clock)."""
SIZES = (1_000, 10_000)
SCANS = 5
ABOVE_SHARE = 0.02
"""Share of sessions whose last prompt was above the proactive share of the planned window."""
LARGE_SHARE = 0.20
"""Share of sessions with a prompt of tens of thousands of tokens (long chats, earlier turns summarized)."""
LIVE_LOOKS = 0.10
"""Share of sessions with a live cache entry: a keep-alive look later in the hour."""
DUE_LOOKS = 50
"""Looks due at every scan, at every size: roughly what 10,000 chats talking daily leave due a minute."""
GROUP_SHARE = 0.2
SEED_AT_ONCE = 16
"""Chats seeded concurrently through the API (SQLite takes them one at a time on its one connection)."""
CLONE_BATCH = 1_000
SYSTEM_TOKENS = 3_500
"""System prompt and tool definitions: what every reply call's prompt carries before the messages."""

_at: contextvars.ContextVar[datetime] = contextvars.ContextVar("bench_job_scans_at", default=NOW)


def _clock() -> datetime:
    """The store's clock: NOW, or the time the seeding task set for its chat."""
    return _at.get()


class Statements:
    """SQL statements sent by every engine of the process (the store's, and the chat locks' own
    connection on Postgres), `BEGIN` excluded (SQLite's `BEGIN IMMEDIATE` is one)."""

    def __init__(self) -> None:
        self.count = 0
        event.listen(Engine, "before_cursor_execute", self._on)

    def close(self) -> None:
        event.remove(Engine, "before_cursor_execute", self._on)

    def _on(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if not statement.lstrip().upper().startswith("BEGIN"):
            self.count += 1


@dataclass(frozen=True, slots=True)
class Scan:
    db: str
    sessions: int
    job: str
    median_ms: float
    statements: int
    found: int
    """What the scan found: candidates, looks processed, rollup rows written."""
    error: str | None = None
    """Why the job body failed (the figures are then those of the failing run)."""

    def cell(self) -> str:
        if self.error is not None:
            return f"{'FAILED':>11s} ({self.statements:3d})"
        return f"{self.median_ms:8.2f} ms ({self.statements:3d})"


@dataclass
class Seeded:
    """What the seeding left, by session id."""

    above: list[int]
    due: list[int]
    chats: int = 0
    template: int | None = None
    """A session seeded through the store's API, whose rows the others copy."""


@dataclass(frozen=True, slots=True)
class Profile:
    """One chat to seed: when it was last active, its kind, its messages' lengths and its last prompt."""

    n: int
    last: datetime
    group: bool
    words: tuple[int, ...]
    above: bool
    prompt: int | None
    """The last reply call's prompt (None: the system prompt and the messages before the reply)."""
    look: datetime | None

    @classmethod
    def draw(cls, rng: random.Random, n: int, window: int) -> Profile:
        last = NOW - timedelta(minutes=rng.uniform(35, 48 * 60))
        group = rng.random() < GROUP_SHARE
        words = tuple(rng.randint(20, 150) for _ in range(MESSAGES))
        above = rng.random() < ABOVE_SHARE
        prompt = None
        if above:
            prompt = int(window * rng.uniform(0.62, 0.80))
        elif rng.random() < LARGE_SHARE:
            prompt = rng.randint(10_000, 60_000)
        look = NOW + timedelta(minutes=rng.uniform(1, 55)) if rng.random() < LIVE_LOOKS else None
        return cls(n, last, group, words, above, prompt, look)

    def messages(self, rng: random.Random) -> list[NewMessage]:
        out = []
        for i, words in enumerate(self.words):
            role: Literal["user", "assistant"] = "user" if i % 2 == 0 else "assistant"
            said = _text(rng, words)
            content: list[dict[str, Any]] = [{"type": "text", "text": said}]
            out.append(
                NewMessage(
                    role=role,
                    content=content,
                    text=said,
                    token_estimate=estimate_message({"role": role, "content": content}),
                    author_id=f"u{self.n}" if role == "user" else "assistant",
                    author_name="Sam" if role == "user" else "assistant",
                    platform_message_id=f"c{self.n}m{i}" if role == "user" else None,
                    created_at=self.last - timedelta(minutes=MESSAGES - 1 - i),
                )
            )
        return out

    def call(self, model: str, messages: list[NewMessage]) -> CallRecord:
        """The reply call that answered the last user message."""
        prompt = self.prompt or SYSTEM_TOKENS + sum(m.token_estimate for m in messages[:-1])
        read = int(prompt * 0.9)
        return CallRecord(
            model, "reply", input_tokens=prompt - read, output_tokens=180, cache_read_tokens=read
        )


MESSAGES = 4
API_CHATS = 200
"""Chats seeded through the store's API; the others are copies of their rows (see `_clone`)."""


async def _seed_chat(store: Store, chat: Profile, rng: random.Random, model: str) -> int:
    """One chat through the store's API (the clock, a context variable, is this task's own)."""
    _at.set(chat.last - timedelta(minutes=MESSAGES))
    kind, title = ("group", f"group {chat.n}") if chat.group else ("private", None)
    record = await store.get_or_create_chat("bench", f"c{chat.n}", None, kind=kind, title=title)
    session = await store.active_session(record.id)
    batch = chat.messages(rng)
    results = await store.append_messages(session.id, batch)
    _at.set(chat.last)
    call = chat.call(model, batch)
    await store.record_call(session.id, record.id, call, last_message_id=results[-2].message.id)
    if chat.look is not None:
        await store.set_cache_look(session.id, chat.look)
    return session.id


async def _template(store: Store, session_pk: int) -> dict[str, Any]:
    """The rows the store's API wrote for one chat: its chat, session, messages and reply call."""
    async with store.engine.connect() as conn:
        session = (await conn.execute(select(sessions).where(sessions.c.id == session_pk))).one()._asdict()
        chat = (await conn.execute(select(chats).where(chats.c.id == session["chat_pk"]))).one()._asdict()
        rows = (
            await conn.execute(
                select(messages).where(messages.c.session_pk == session_pk).order_by(messages.c.seq)
            )
        ).all()
        call = (
            (await conn.execute(select(llm_calls).where(llm_calls.c.session_pk == session_pk)))
            .one()
            ._asdict()
        )
    return {"chat": chat, "session": session, "messages": [r._asdict() for r in rows], "call": call}


def _without_id(row: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**{k: v for k, v in row.items() if k != "id"}, **changes}


async def _clone(
    store: Store, template: dict[str, Any], profiles: list[Profile], rng: random.Random, model: str
) -> list[int]:
    """Chats whose rows copy the template's (what the store's API wrote for one chat), with each chat's own
    times, kind, texts, token counts, prompt and look: the same columns, many rows per statement."""
    async with store.engine.begin() as conn:
        chat_rows = [
            _without_id(
                template["chat"],
                chat_id=f"c{p.n}",
                kind="group" if p.group else "private",
                title=f"group {p.n}" if p.group else None,
                created_at=p.last - timedelta(minutes=MESSAGES),
            )
            for p in profiles
        ]
        chat_pks = list(
            (
                await conn.execute(
                    chats.insert().returning(chats.c.id, sort_by_parameter_order=True), chat_rows
                )
            ).scalars()
        )
        news = [p.messages(rng) for p in profiles]
        calls = [p.call(model, batch) for p, batch in zip(profiles, news, strict=True)]
        session_rows = [
            _without_id(
                template["session"],
                chat_pk=chat_pk,
                created_at=p.last - timedelta(minutes=MESSAGES),
                last_activity_at=p.last,
                last_call_at=p.last,
                last_prompt_tokens=call.prompt_tokens,
                last_call_message_id=None,
                active_tokens=sum(m.token_estimate for m in batch),
                cache_look_at=p.look,
            )
            for p, chat_pk, batch, call in zip(profiles, chat_pks, news, calls, strict=True)
        ]
        session_pks = list(
            (
                await conn.execute(
                    sessions.insert().returning(sessions.c.id, sort_by_parameter_order=True), session_rows
                )
            ).scalars()
        )
        message_rows = [
            _without_id(
                row,
                session_pk=session_pk,
                chat_pk=chat_pk,
                text=m.text,
                content=m.content,
                token_estimate=m.token_estimate,
                author_id=m.author_id,
                platform_message_id=m.platform_message_id,
                created_at=m.created_at,
            )
            for chat_pk, session_pk, batch in zip(chat_pks, session_pks, news, strict=True)
            for row, m in zip(template["messages"], batch, strict=True)
        ]
        message_ids = list(
            (
                await conn.execute(
                    messages.insert().returning(messages.c.id, sort_by_parameter_order=True), message_rows
                )
            ).scalars()
        )
        replied = message_ids[MESSAGES - 2 :: MESSAGES]  # each chat's last user message: the call's last
        await conn.execute(
            update(sessions)
            .where(sessions.c.id == bindparam("pk"))
            .values(last_call_message_id=bindparam("last")),
            [{"pk": pk, "last": last} for pk, last in zip(session_pks, replied, strict=True)],
        )
        call_rows = [
            _without_id(
                template["call"],
                chat_pk=chat_pk,
                session_pk=session_pk,
                input_tokens=call.input_tokens,
                cache_read_tokens=call.cache_read_tokens,
                created_at=p.last,
            )
            for p, chat_pk, session_pk, call in zip(profiles, chat_pks, session_pks, calls, strict=True)
        ]
        await conn.execute(llm_calls.insert(), call_rows)
    return session_pks


async def _seed(store: Store, seeded: Seeded, upto: int, model: str, window: int) -> float:
    """Grow the database to `upto` chats; returns the wall seconds it took."""
    await _durable(store, False)
    started = time.perf_counter()
    rng = random.Random(f"job-scans:{seeded.chats}")
    profiles = [Profile.draw(rng, n, window) for n in range(seeded.chats, upto)]
    by_api = profiles[: max(API_CHATS - seeded.chats, 0)]
    for start in range(0, len(by_api), SEED_AT_ONCE):
        chunk = by_api[start : start + SEED_AT_ONCE]
        done = await asyncio.gather(
            *(_seed_chat(store, p, random.Random(rng.random()), model) for p in chunk)
        )
        seeded.above += [pk for pk, p in zip(done, chunk, strict=True) if p.above]
        missing = DUE_LOOKS - len(seeded.due)
        seeded.due += [pk for pk, p in zip(done, chunk, strict=True) if not p.above][: max(missing, 0)]
        seeded.template = seeded.template or done[0]
    cloned = profiles[len(by_api) :]
    if cloned:
        if seeded.template is None:
            raise RuntimeError("no chat seeded through the store's API to copy")
        template = await _template(store, seeded.template)
        for start in range(0, len(cloned), CLONE_BATCH):
            chunk = cloned[start : start + CLONE_BATCH]
            pks = await _clone(store, template, chunk, rng, model)
            seeded.above += [pk for pk, p in zip(pks, chunk, strict=True) if p.above]
    seeded.chats = upto
    took = time.perf_counter() - started
    await _durable(store, True)
    return took


async def _durable(store: Store, on: bool) -> None:
    """Commits flushed to disk (as in production) or not (while seeding, to keep the run short)."""
    if store.dialect == "postgresql":
        async with store.engine.connect() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            name = (await auto.execute(text("SELECT current_database()"))).scalar_one()
            change = "RESET synchronous_commit" if on else "SET synchronous_commit = off"
            await auto.execute(text(f'ALTER DATABASE "{name}" {change}'))
        await store.engine.dispose()  # new connections take the database's setting
    else:  # one pooled connection, kept for the whole run; the pragma must be set outside a transaction
        async with store.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            await driver.execute(f"PRAGMA synchronous={'FULL' if on else 'OFF'}")


async def _set_due(store: Store, due: list[int]) -> None:
    async with store.engine.begin() as conn:
        at = NOW - timedelta(seconds=30)
        await conn.execute(update(sessions).where(sessions.c.id.in_(due)).values(cache_look_at=at))


async def _mark_tried(store: Store, above: list[int]) -> None:
    """An aborted scheduled attempt for each session above the floor not tried yet (as a running
    scheduler leaves them: each tried once per idle spell)."""
    async with store.engine.connect() as conn:
        query = text("SELECT DISTINCT session_pk FROM compactions WHERE trigger = 'scheduled'")
        tried = {int(r[0]) for r in (await conn.execute(query)).all()}
    for session_pk in above:
        if session_pk not in tried:
            await store.record_compaction_attempt(
                session_pk, trigger="scheduled", outcome="aborted", reason="bench: tried this idle spell"
            )


async def _time(
    scan: Scan,
    counter: Statements,
    scans: int,
    body: Callable[[], Awaitable[object]],
    found: Callable[[], Awaitable[int]],
    before: Callable[[], Awaitable[None]] | None = None,
) -> Scan:
    """`scan` with the median ms and the statements per scan of `body`, after one untimed warm-up, and
    what `found` reads after the last (outside the timing); a body that fails the store ends it there,
    with its error."""
    times, counts = [], []
    for n in range(scans + 1):
        if before is not None:
            await before()
        counter.count = 0
        started = time.perf_counter()
        try:
            await body()
        except StoreError as exc:
            elapsed = (time.perf_counter() - started) * 1000
            return replace(scan, median_ms=elapsed, statements=counter.count, error=str(exc))
        elapsed = time.perf_counter() - started
        if n:
            times.append(elapsed * 1000)
            counts.append(counter.count)
    return replace(scan, median_ms=statistics.median(times), statements=max(counts), found=await found())


def _bodies(gateway: Gateway) -> dict[str, JobBody]:
    """The job bodies the scheduler runs, as `Gateway._start_scheduler` builds them."""

    async def keep_alive() -> None:  # `Gateway._keep_caches_warm`
        await gateway.keeper.run(gateway.now())

    specs = standard_jobs(
        store=gateway.store,
        locks=gateway.locks,
        compactor=gateway.compactor,
        make_engine=gateway.kit.engine,
        policy=gateway.policy,
        retention_days=0,
        keep_alive=keep_alive,
        clock=gateway.now,
    )
    return {spec.name: spec.body for spec in specs}


async def _measure(gateway: Gateway, counter: Statements, seeded: Seeded, db: str, scans: int) -> list[Scan]:
    store, policy = gateway.store, gateway.policy
    bodies = _bodies(gateway)
    size = seeded.chats
    floor = policy.proactive_share if policy.cache_aware_share is None else policy.cache_aware_share
    floor = min(floor, policy.proactive_share)

    async def candidates() -> int:  # the idle-compaction body's candidate query, with its arguments
        found = await store.idle_sessions(
            idle_since=gateway.now() - policy.idle,
            min_tokens=int(policy.context_length * floor),
            limit=IDLE_BATCH,
        )
        return len(found)

    async def none() -> int:
        return 0

    async def due() -> int:
        return len(seeded.due)

    async def rollup_rows() -> int:
        async with store.engine.connect() as conn:
            return int((await conn.execute(text("SELECT count(*) FROM usage_daily"))).scalar_one())

    def scan(job: str) -> Scan:
        return Scan(db, size, job, 0.0, 0, 0)

    results = [await _time(scan("idle selection"), counter, scans, candidates, candidates)]
    await _mark_tried(store, seeded.above)
    idle = await _time(scan("idle job"), counter, scans, bodies["idle-compaction"], candidates)
    if idle.found:
        raise RuntimeError(f"the idle job still finds {idle.found} candidate(s) once every one was tried")
    results.append(idle)
    results.append(await _time(scan("keep-alive, 0 due"), counter, scans, bodies["cache-keepalive"], none))
    results.append(
        await _time(
            scan(f"keep-alive, {len(seeded.due)} due"),
            counter,
            scans,
            bodies["cache-keepalive"],
            due,
            before=lambda: _set_due(store, seeded.due),
        )
    )
    results.append(await _time(scan("usage rollup"), counter, scans, bodies["usage-rollup"], rollup_rows))
    return results


async def run_db(db: str, *, sizes: tuple[int, ...], scans: int, pg_url: str) -> list[Scan]:
    results: list[Scan] = []
    async with FakeAnthropic(api_key=API_KEY) as fake, fresh_database(db, postgres_url=pg_url) as url:
        store = await Store.open(url, clock=_clock)
        llm = AnthropicClient(api_key=API_KEY, base_url=fake.base_url)
        with tempfile.TemporaryDirectory(prefix="bench-spool-") as spool:
            settings = bench_settings(url, fake.base_url, spool_dir=Path(spool))
            gateway = Gateway(settings, [], store=store, llm=llm)
            gateway.clock = _clock
            counter = Statements()
            seeded = Seeded([], [])
            try:
                for size in sizes:
                    took = await _seed(store, seeded, size, settings.model, gateway.policy.context_length)
                    print(
                        f"job scans[{db}]: {size:,} idle sessions ({len(seeded.above)} above the proactive "
                        f"share, {len(seeded.due)} looks due) seeded in {took:.1f} s",
                        flush=True,
                    )
                    for scan in await _measure(gateway, counter, seeded, db, scans):
                        what = f"failed: {scan.error}" if scan.error else f"found {scan.found}"
                        print(
                            f"job scans[{db} {scan.sessions:,}] {scan.job:18s} {scan.median_ms:8.2f} ms "
                            f"{scan.statements:4d} statements ({what})",
                            flush=True,
                        )
                        results.append(scan)
            finally:
                counter.close()
                await gateway.locks.close()
                await llm.close()
                await store.close()
    return results


async def run(
    *,
    dbs: tuple[str, ...] = ("sqlite", "postgres"),
    sizes: tuple[int, ...] = SIZES,
    scans: int = SCANS,
    pg_url: str = DEFAULT_POSTGRES_URL,
) -> list[Scan]:
    results = []
    for db in dbs:
        results += await run_db(db, sizes=sizes, scans=scans, pg_url=pg_url)
    _print_table(results, sizes)
    return results


def _print_table(results: list[Scan], sizes: tuple[int, ...]) -> None:
    by = {(s.db, s.sessions, s.job): s for s in results}
    dbs = sorted({s.db for s in results}, key=lambda d: d != "sqlite")
    jobs = list(dict.fromkeys(s.job for s in results))
    first, last = sizes[0], sizes[-1]
    print(
        f"job scans: median ms per scan (SQL statements) at {', '.join(f'{n:,}' for n in sizes)} "
        "idle sessions"
    )
    for db in dbs:
        for job in jobs:
            row = [by[(db, n, job)] for n in sizes if (db, n, job) in by]
            if len(row) != len(sizes):
                continue
            cells = "  ".join(scan.cell() for scan in row)
            ok = row[0].error is None and row[-1].error is None
            growth = f"{row[-1].median_ms / row[0].median_ms:.1f}x" if ok else "-"
            print(f"  {db:8s} {job:18s} {cells}  {last:,} vs {first:,}: {growth}")
    for scan in results:
        if scan.error is not None:
            print(f"  FAILED: {scan.db} {scan.job} at {scan.sessions:,} sessions: {scan.error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--db", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated, ascending")
    parser.add_argument("--scans", type=int, default=SCANS, help="timed scans per job and size")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    asyncio.run(run(dbs=tuple(args.db.split(",")), sizes=sizes, scans=args.scans, pg_url=args.postgres_url))


if __name__ == "__main__":
    main()
