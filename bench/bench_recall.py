"""Recall: does the question find the message that answers it, and how fast, on SQLite and Postgres.

Quality: a generated group chat (`bench/recall_corpus.py`: 3,000 messages, four people and the
assistant, six months, several sessions, about a tenth Chinese) is stored through the Store; each
question is asked verbatim through `Store.search_history` (limit 5, as the tool does by default).
R@k: the answering message is among what the first k results show (the hit or the question/answer
neighbour printed with it). Keyword ranking alone, then fused (at several semantic weights) with a
semantic ranking filtered to the search's scope before its top 100 are taken, as the gateway does. The
vectors come from WordLlama (`bench/recall_embedders.py`: a small real model shipped in its wheel) and
from the deterministic fake embedder of `tests/fakes/embeddings/model.py` (feature hashing plus a fixed
synonym list; it shows that fusion works, not what a real embedding model scores).

Latency: the same questions against chats of 1,000, 10,000 and 100,000 messages (end to end through
`Store.search_history`, including the rows, excerpts and neighbours of the hits; the semantic variant
adds the in-memory nearest-vector search, not an endpoint round trip). At each size also the cost the
index adds to storing a message: `Store.store_incoming` timed with the index trigger, then with it
dropped (200 messages each, into the same chat).

Run: `python -m bench.bench_recall` (`--quick`: 1,000 and 10,000 only). Targets: keyword R@5 >= 0.85;
p50 <= 20 ms at 100,000 messages.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import insert, select, text, update

from agent.tools.recall_types import RecallQuery, RecallResults
from bench.databases import DEFAULT_POSTGRES_URL, fresh_database
from bench.recall_corpus import KINDS, Corpus, Question, generate
from bench.recall_embedders import Embed, fake, wordllama
from gateway.embeddings.index import VectorIndex
from gateway.embeddings.ranker import nearest_in_scope
from gateway.store.messages.window import SEQ_STEP
from gateway.store.records import CompactionApply, NewMessage, NewSummary
from gateway.store.repository import Store
from gateway.store.rows import messages, sessions
from gateway.store.search.scope import Scope
from gateway.store.search.vectors import NewVector
from tests.fakes.embeddings.model import embed

QUALITY_MESSAGES = 3_000
LATENCY_SIZES = (1_000, 10_000, 100_000)
WINDOW = 40
"""Messages of the current session left in the window (the rest archived by a compaction)."""
R5_TARGET = 0.85
P50_TARGET_MS = 20.0
BATCH = 1_000
MODEL_KEY = "fake-hash@256"
WEIGHTS = (0.25, 0.5, 1.0)
"""Semantic weights measured (each keyword list weighs 1)."""


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _insert(store: Store, chat_pk: int, session_pk: int, corpus: Corpus, lines: range) -> list[int]:
    """Insert corpus lines straight into `messages` (the index triggers still run for every row)."""
    rows = [
        {
            "session_pk": session_pk,
            "chat_pk": chat_pk,
            "seq": SEQ_STEP * (k + 1),
            "role": "assistant" if corpus.lines[k].author == "assistant" else "user",
            "content": corpus.lines[k].text,
            "text": corpus.lines[k].text,
            "author_id": corpus.lines[k].author.lower().replace(" ", "-"),
            "author_name": corpus.lines[k].author,
            "token_estimate": max(1, len(corpus.lines[k].text) // 4),
            "state": "active",
            "pruned": False,
            "needs_reply": False,
            "replied": False,
            "created_at": corpus.times[k],
        }
        for k in lines
    ]
    async with store.engine.begin() as conn:
        for start in range(0, len(rows), BATCH):
            await conn.execute(insert(messages), rows[start : start + BATCH])
        found = await conn.execute(
            select(messages.c.id).where(messages.c.session_pk == session_pk).order_by(messages.c.seq)
        )
        ids = [int(i) for i in found.scalars()]
        await conn.execute(
            update(sessions)
            .where(sessions.c.id == session_pk)
            .values(next_seq=SEQ_STEP * (lines.stop + 1), active_message_count=len(ids))
        )
    return ids


async def load(store: Store, corpus: Corpus) -> tuple[int, list[int]]:
    """Store the corpus as one chat (a session per corpus session); returns (chat_pk, message ids)."""
    chat = await store.get_or_create_chat("telegram", "-100recall", None, kind="group", title="Friends")
    session = (await store.active_session(chat.id)).id
    ids: list[int] = []
    bounds = [k for k in range(1, len(corpus.lines)) if corpus.sessions[k] != corpus.sessions[k - 1]]
    for start, stop in zip([0, *bounds], [*bounds, len(corpus.lines)], strict=True):
        if start:
            session = (await store.new_session(chat.id)).id
        ids += await _insert(store, chat.id, session, corpus, range(start, stop))
    current = corpus.sessions[-1]
    # The current session was compacted down to its last WINDOW messages, as a long session would be.
    in_current = [ids[k] for k in range(len(ids)) if corpus.sessions[k] == current]
    if len(in_current) > WINDOW:
        summary = "## Goal\nKeep the friends' plans straight."
        await store.apply_compaction(
            session,
            CompactionApply(
                trigger="hygiene",
                outcome="ok",
                removed_ids=in_current[:-WINDOW],
                summary=NewSummary(role="user", content=summary, text=summary, token_estimate=20),
                insert_summary_before_id=in_current[-WINDOW],
                messages_before=len(in_current),
                messages_after=WINDOW + 1,
            ),
        )
    # Statistics and visibility, as autovacuum leaves a long-lived database.
    if store.dialect == "postgresql":
        async with store.engine.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text("VACUUM ANALYZE"))
    else:
        async with store.engine.begin() as conn:
            await conn.execute(text("ANALYZE"))
    return chat.id, ids


async def add_vectors(
    store: Store,
    chat_pk: int,
    ids: list[int],
    corpus: Corpus,
    embedder: Embed | None = None,
    key: str = MODEL_KEY,
) -> None:
    run = embedder or fake()
    for start in range(0, len(ids), BATCH):
        chunk = range(start, min(len(ids), start + BATCH))
        vectors = run([corpus.lines[k].text for k in chunk])
        items = [
            NewVector(
                message_id=ids[k],
                chat_pk=chat_pk,
                vector=vectors[i].astype("<f4").tobytes(),
                dims=int(vectors.shape[1]),
            )
            for i, k in enumerate(chunk)
        ]
        await store.save_vectors(key, items)


async def in_scope_nearest(store: Store, index: VectorIndex, chat_pk: int, query: Any) -> list[int]:
    """The semantic side as the ranker runs it once it has the query's vector (no endpoint call)."""
    return await nearest_in_scope(index, store, Scope(chat_pk), query)


def shown(result: RecallResults, k: int) -> list[int]:
    out: list[int] = []
    for hit in result.hits[:k]:
        out += [p.message_id for p in (hit.before, hit.main, hit.after) if p is not None]
    return out


class Scorer:
    """R@1 / R@5 per question kind; a message counts when it states the fact (same author and text)."""

    def __init__(self, corpus: Corpus, ids: list[int]) -> None:
        self.key = {ids[k]: (line.author, line.text) for k, line in enumerate(corpus.lines)}
        self.answer = {line.fact: (line.author, line.text) for line in corpus.lines if line.fact is not None}
        self.hits: dict[str, list[tuple[bool, bool]]] = defaultdict(list)

    def add(self, question: Question, result: RecallResults) -> None:
        want = self.answer[question.fact]
        at1 = any(self.key.get(i) == want for i in shown(result, 1))
        at5 = any(self.key.get(i) == want for i in shown(result, 5))
        self.hits[question.kind].append((at1, at5))

    def table(self) -> dict[str, tuple[int, float, float]]:
        rows = {}
        every = [h for kind in KINDS for h in self.hits.get(kind, [])]
        for kind, found in [*((k, self.hits.get(k, [])) for k in KINDS), ("all", every)]:
            if found:
                n = len(found)
                rows[kind] = (n, sum(a for a, _ in found) / n, sum(b for _, b in found) / n)
        return rows


def unique_questions(corpus: Corpus) -> list[Question]:
    """Questions whose wording is unique in the corpus (two facts asked the same way are ambiguous)."""
    counts: dict[str, int] = defaultdict(int)
    for q in corpus.questions:
        counts[q.text] += 1
    return [q for q in corpus.questions if counts[q.text] == 1]


def embedders() -> dict[str, Embed]:
    found = {"fake": fake()}
    real = wordllama()
    if real is not None:
        found = {"wordllama": real, **found}
    return found


async def quality(kind: str, pg_url: str) -> dict[str, dict[str, tuple[int, float, float]]]:
    corpus = generate(QUALITY_MESSAGES)
    questions = unique_questions(corpus)
    tables: dict[str, dict[str, tuple[int, float, float]]] = {}
    async with fresh_database(kind, postgres_url=pg_url, durable=False) as url:
        store = await Store.open(url)
        try:
            chat_pk, ids = await load(store, corpus)
            keyword = Scorer(corpus, ids)
            requests = [RecallQuery(text=q.text, limit=5) for q in questions]
            for question, request in zip(questions, requests, strict=True):
                keyword.add(question, await store.search_history(chat_pk, request))
            tables["keyword"] = keyword.table()
            for name, run in embedders().items():
                key = f"{name}@bench"
                await add_vectors(store, chat_pk, ids, corpus, run, key)

                async def vectors(
                    chat: int, after: int, limit: int, key: str = key
                ) -> list[tuple[int, float, bytes]]:
                    return await store.chat_vectors(chat, model=key, after_id=after, limit=limit)

                index = VectorIndex(vectors, max_bytes=1 << 30)
                queries = run([q.text for q in questions])
                similar = [await in_scope_nearest(store, index, chat_pk, v) for v in queries]
                for weight in WEIGHTS:
                    hybrid = Scorer(corpus, ids)
                    for question, request, near in zip(questions, requests, similar, strict=True):
                        found = await store.search_history(
                            chat_pk, request, semantic=near, semantic_weight=weight
                        )
                        hybrid.add(question, found)
                    tables[f"keyword + {name} semantic, weight {weight:g}"] = hybrid.table()
        finally:
            await store.close()
    return tables


async def _timings(
    store: Store, chat_pk: int, questions: list[Question], index: VectorIndex | None
) -> list[float]:
    timings: list[float] = []
    for round_ in range(2):
        for question in questions:
            started = time.perf_counter()
            similar: list[int] = []
            if index is not None:
                query = np.asarray(embed(question.text), dtype=np.float32)
                similar = await in_scope_nearest(store, index, chat_pk, query)
            await store.search_history(chat_pk, RecallQuery(text=question.text), semantic=similar)
            if round_:  # the first round warms caches and statement compilation
                timings.append((time.perf_counter() - started) * 1000)
    return timings


STORE_SAMPLES = 200
_DROP_TRIGGER = {
    "sqlite": "DROP TRIGGER search_messages_insert",
    "postgresql": "DROP TRIGGER search_messages_insert ON messages",
}


async def _store_timings(store: Store, chat_pk: int, tag: str) -> list[float]:
    """Milliseconds of `Store.store_incoming` (the per-message hot path) for fresh messages."""
    timings = []
    for i in range(STORE_SAMPLES):
        message = NewMessage(
            role="user",
            content=f"{tag} message {i} about the garden shed roof",
            text=f"{tag} message {i} about the garden shed roof",
            token_estimate=10,
            author_id="bench",
            author_name="Bench",
            platform_message_id=f"{tag}-{i}",
        )
        started = time.perf_counter()
        await store.store_incoming(chat_pk, message)
        timings.append((time.perf_counter() - started) * 1000)
    return timings[10:]


async def latency(kind: str, size: int, pg_url: str) -> dict[str, tuple[float, float, int]]:
    """p50, p99 and count of query times, keyword only and with the fake semantic ranking; and of
    storing one message with the index trigger and with it dropped."""
    corpus = generate(size)
    results = {}
    async with fresh_database(kind, postgres_url=pg_url, durable=False) as url:
        store = await Store.open(url)
        try:
            chat_pk, ids = await load(store, corpus)
            keyword = await _timings(store, chat_pk, corpus.questions, None)
            await add_vectors(store, chat_pk, ids, corpus)

            async def vectors(chat: int, after: int, limit: int) -> list[tuple[int, float, bytes]]:
                return await store.chat_vectors(chat, model=MODEL_KEY, after_id=after, limit=limit)

            index = VectorIndex(vectors, max_bytes=1 << 30)
            hybrid = await _timings(store, chat_pk, corpus.questions, index)
            indexed = await _store_timings(store, chat_pk, "indexed")
            async with store.engine.begin() as conn:
                await conn.execute(text(_DROP_TRIGGER[store.dialect]))
            plain = await _store_timings(store, chat_pk, "plain")
        finally:
            await store.close()
    modes = {
        "keyword": keyword,
        "keyword + fake semantic": hybrid,
        "store_incoming, indexed": indexed,
        "store_incoming, index trigger dropped": plain,
    }
    for mode, timings in modes.items():
        results[mode] = (statistics.median(timings), percentile(timings, 0.99), len(timings))
    return results


def _print_quality(kind: str, tables: dict[str, dict[str, tuple[int, float, float]]]) -> None:
    print(
        f"recall quality, {kind} ({QUALITY_MESSAGES:,} messages), R@1 / R@5 by kind of question:", flush=True
    )
    kinds = list(tables["keyword"])
    print(f"  {'mode':<44}" + "".join(f"{k[:11]:>12}" for k in kinds))
    for mode, table in tables.items():
        cells = [table.get(k) for k in kinds]
        print(f"  {mode:<44}" + "".join(f"{c[1]:>7.2f}/{c[2]:.2f}" if c else f"{'':>12}" for c in cells))


async def run(*, pg_url: str = DEFAULT_POSTGRES_URL, sizes: Sequence[int] = LATENCY_SIZES) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for kind in ("sqlite", "postgres"):
        tables = await quality(kind, pg_url)
        _print_quality(kind, tables)
        results[f"quality/{kind}"] = tables
    for kind in ("sqlite", "postgres"):
        for size in sizes:
            started = time.perf_counter()
            for mode, (p50, p99, n) in (await latency(kind, size, pg_url)).items():
                print(
                    f"recall latency, {kind}, {size:>7,} messages, {mode}: p50 {p50:.2f} ms, "
                    f"p99 {p99:.2f} ms ({n} samples)",
                    flush=True,
                )
                results[f"latency/{kind}/{size}/{mode}"] = (p50, p99)
            print(f"  (set-up and runs {time.perf_counter() - started:.0f} s)", flush=True)
    print(f"targets: keyword R@5 >= {R5_TARGET}; p50 <= {P50_TARGET_MS:.0f} ms at 100,000 messages")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--quick", action="store_true", help="latency at 1,000 and 10,000 messages only")
    args = parser.parse_args()
    asyncio.run(run(pg_url=args.postgres_url, sizes=LATENCY_SIZES[:2] if args.quick else LATENCY_SIZES))


if __name__ == "__main__":
    main()
