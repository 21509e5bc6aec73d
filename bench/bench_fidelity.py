"""How much of a long conversation survives compaction: 200 planted facts, three days, every trigger.

Run: `python -m bench.bench_fidelity [--db sqlite|postgres|both]`. A three-day private chat and a
three-day group chat (the cost benchmark's generators: overnight quiet, a group's unaddressed chatter)
each get 100 facts planted at random points: codes, amounts, names and decisions, each with a unique
marker and a natural query made of its key words. Some facts are also pinned (`/pin`), the admin runs
`/compact` now and then, and the idle-compaction job runs at simulated times, so every trigger fires
(after a reply, in the loop, hygiene, scheduled, manual). The fake summarizer keeps only what it can
recognise as identifiers within its budget, so names, amounts and decisions are dropped from summaries.

At the end each fact is classified, first match wins: in the active window verbatim, in a pin, in the
current summary, found by `recall` (the store's search behind the tool, top 5, with the fact's key
words), or lost. Target: 0 lost, on both databases.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.compaction.prompt import is_summary_message
from agent.llm import AnthropicClient
from agent.tools.recall_types import RecallQuery
from agent.types import text_of
from bench.databases import DEFAULT_POSTGRES_URL, fresh_database
from bench.engines import SCALED, use_scaled_server
from bench.replay import API_KEY, SCAN_EVERY, SimClock, bench_settings, run_idle_scan
from bench.traces import DAY, Event, group_chat, private_chat
from gateway.app.gateway import Gateway
from gateway.platforms.base import Author, ChatKind, ChatRef, IncomingMessage
from gateway.store import Store
from tests.fakes.anthropic import FakeAnthropic
from tests.support.memory_adapter import DirectMemoryAdapter

FACTS_PER_CHAT = 100
PIN_EVERY = 12
"""One fact in this many is also pinned right after it is said."""
COMPACT_EVERY = 40
"""The admin runs /compact after this many planted facts (manual trigger)."""
WINDOW = 12_000
ADMIN = "1"
CLASSES = ("window", "pin", "summary", "recall", "lost")

_SYLLABLES = ("ka", "lo", "mi", "ren", "to", "va", "shi", "dor", "ne", "pa", "qui", "zel", "bo", "ta", "fu")
_THINGS = ("lab door", "wifi", "alarm", "locker", "garage", "printer", "safe", "server room")
_ACTIONS = ("move the launch", "freeze the budget", "hire a contractor", "switch vendors", "cancel the trip")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str
    text: str
    marker: str
    """What must survive, word for word."""
    query: str
    """A natural recall query: the fact's key words, not its marker."""


def _name(rng: random.Random, used: set[str]) -> str:
    while True:
        name = "".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize()
        if name not in used:
            used.add(name)
            return name


def make_facts(rng: random.Random, n: int) -> list[Fact]:
    used: set[str] = set()
    facts: list[Fact] = []
    for i in range(n):
        kind = ("code", "amount", "name", "decision")[i % 4]
        unique = _name(rng, used)
        if kind == "code":
            code = f"{rng.choice('KQXZ')}{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"
            thing = f"{rng.choice(_THINGS)} at {unique}"
            facts.append(Fact(kind, f"note: the code for the {thing} is {code}", code, f"code {thing}"))
        elif kind == "amount":
            amount = f"{rng.randint(1, 48)},{rng.randint(100, 999)}.{rng.randint(10, 99)}"
            facts.append(
                Fact(kind, f"fyi the {unique} invoice came to {amount} euros", amount, f"{unique} invoice")
            )
        elif kind == "name":
            person = f"{_name(rng, used)} {_name(rng, used)}"
            facts.append(
                Fact(kind, f"our contact at {unique} Ltd is {person}", person, f"contact at {unique}")
            )
        else:
            decision = f"{rng.choice(_ACTIONS)} to {rng.choice(_DAYS)}"
            facts.append(
                Fact(
                    kind,
                    f"ok we decided for project {unique}: {decision}",
                    f"project {unique}: {decision}",
                    f"decided project {unique}",
                )
            )
    return facts


@dataclass(frozen=True, slots=True)
class Step:
    at: float
    event: Event
    command: str | None = None
    """A command the event carries instead of chat text ("pin", "compact")."""
    args: str = ""


def plant(events: list[Event], facts: Sequence[Fact], rng: random.Random) -> list[Step]:
    """The chat's events plus one message per fact, said at random points by whoever speaks there (in
    a group, not addressed to the bot), some pinned, and a manual /compact every COMPACT_EVERY facts."""
    spots = sorted(rng.choices(range(len(events)), k=len(facts)))
    steps = [Step(event.at, event) for event in events]
    for planted, (spot, fact) in enumerate(zip(spots, facts, strict=True), start=1):
        event = events[spot]
        at = event.at + 5 + planted / 1000
        said = replace(event, text=fact.text, addressed=not event.group)
        steps.append(Step(at, said))
        admin = replace(event, user_id=ADMIN, name="Admin", addressed=True)
        if planted % PIN_EVERY == 0:
            steps.append(Step(at + 1, admin, "pin", fact.text))
        if planted % COMPACT_EVERY == 0:
            steps.append(Step(at + 2, admin, "compact"))
    steps.sort(key=lambda s: s.at)
    return steps


def _chat(event: Event) -> ChatRef:
    kind = ChatKind.GROUP if event.group else ChatKind.PRIVATE
    return ChatRef(
        platform="telegram", chat_id=event.chat_id, kind=kind, title="Team" if event.group else None
    )


def _incoming(step: Step, n: int, clock: SimClock) -> IncomingMessage:
    event = step.event
    text = f"/{step.command} {step.args}".strip() if step.command else event.text
    return IncomingMessage(
        chat=_chat(event),
        author=Author(user_id=event.user_id, display_name=event.name),
        text=text,
        platform_message_id=f"m{n}",
        sent_at=clock.utc(),
        mentions_bot=event.addressed,
        is_command=step.command is not None,
        command=step.command,
        command_args=step.args,
    )


async def run_chats(database_url: str, steps: Sequence[Step], engine: str = "compressor") -> dict[str, Any]:
    """Replay the steps through the real gateway in simulated time; the idle job runs every 5 minutes."""
    clock = SimClock()
    logging.getLogger("gateway").setLevel(logging.ERROR)
    async with FakeAnthropic(api_key=API_KEY, clock=lambda: 0.0, echo_limit=300, keep_bodies=False) as fake:
        context = {}
        if engine == "server":
            use_scaled_server(fake, WINDOW)
            context = {"context": {"engine": SCALED}}
        settings = bench_settings(
            database_url,
            fake.base_url,
            scheduler={"enabled": False},
            model_context_length=WINDOW,
            telegram_admin_ids=frozenset({int(ADMIN)}),
            **context,
        )
        store = await Store.open(database_url, clock=clock.utc)
        llm = AnthropicClient(api_key=API_KEY, base_url=fake.base_url)
        adapter = DirectMemoryAdapter(name="telegram")
        gateway = Gateway(settings, [adapter], store=store, llm=llm)
        gateway.clock = clock.utc
        scheduled, last_scan = 0, steps[0].at
        try:
            await gateway.start()
            for n, step in enumerate(steps):
                scan = step.at - step.at % SCAN_EVERY
                if scan > last_scan:
                    scheduled += await run_idle_scan(gateway, scan, clock, fake)
                    last_scan = scan
                clock.seconds = step.at
                fake.set_time(step.at)
                await adapter.deliver(_incoming(step, n, clock))
                await gateway.tasks.drain()
        finally:
            await gateway.stop()
            await llm.close()
            await store.close()
        return {
            "calls": len(fake.requests),
            "scheduled": scheduled,
            "server": sum(1 for r in fake.requests if r.compacted),
        }


async def classify(store: Store, chat_id: str, facts: Sequence[Fact]) -> Counter[str]:
    chat = await store.get_or_create_chat("telegram", chat_id, kind="private", title=None)
    session = await store.active_session(chat.id)
    rows = await store.load_window(session.id)
    summary = " ".join(r.text for r in rows if is_summary_message({"role": r.role, "content": r.content}))
    summary += " ".join(_compaction_summaries(r.content) for r in rows)
    window = " ".join(
        _visible_text(r.content)
        for r in rows
        if not is_summary_message({"role": r.role, "content": r.content})
    )
    pins = " ".join(p.text for p in await store.pins(chat.id))
    counts: Counter[str] = Counter()
    for fact in facts:
        if fact.marker in window:
            counts["window"] += 1
        elif fact.marker in pins:
            counts["pin"] += 1
        elif fact.marker in summary:
            counts["summary"] += 1
        elif await _recalled(store, chat.id, fact):
            counts["recall"] += 1
        else:
            counts["lost"] += 1
            print(f"  lost ({fact.kind}): {fact.text!r} (query {fact.query!r})")
    return counts


def _compaction_summaries(content: Any) -> str:
    """The summaries of the API's compaction blocks in a stored message (server-side compaction)."""
    if isinstance(content, str):
        return ""
    return " ".join(str(b.get("content") or "") for b in content if b.get("type") == "compaction")


def _visible_text(content: Any) -> str:
    """A stored message's text outside any compaction block (what is in the window word for word)."""
    if isinstance(content, str):
        return content
    return text_of({"role": "user", "content": [b for b in content if b.get("type") != "compaction"]})


async def _recalled(store: Store, chat_pk: int, fact: Fact) -> bool:
    result = await store.search_history(chat_pk, RecallQuery(text=fact.query, limit=5))
    return any(fact.marker in hit.main.text for hit in result.hits)


def build(seed: int) -> tuple[list[Step], dict[str, list[Fact]]]:
    rng = random.Random(f"fidelity:{seed}")
    private = private_chat(rng, "f-private", days=3)
    group = group_chat(rng, "f-group", days=3, address_rate=0.06)
    facts = {"f-private": make_facts(rng, FACTS_PER_CHAT), "f-group": make_facts(rng, FACTS_PER_CHAT)}
    steps = plant(private, facts["f-private"], rng) + plant(group, facts["f-group"], rng)
    steps += paste_burst(group, rng)
    steps.sort(key=lambda s: s.at)
    return steps, facts


def paste_burst(group: list[Event], rng: random.Random, *, messages: int = 30) -> list[Step]:
    """On the second evening someone pastes a long log into the group in a few minutes and asks the
    bot about it: more than the window's 85% arrives between two turns (hygiene's case)."""
    start = next(e.at for e in group if e.at > 1.75 * DAY)
    speaker = next(e for e in group if e.at >= start)
    lines = [
        Step(
            start + i * 5,
            replace(
                speaker,
                text=f"log part {i}: " + " ".join(f"svc{rng.randint(0, 99)}=ok" for _ in range(90)),
                addressed=False,
            ),
        )
        for i in range(messages)
    ]
    ask = replace(speaker, text="@bot anything wrong in that log?", addressed=True)
    return [*lines, Step(start + messages * 5 + 5, ask)]


async def run_one(
    kind: str, pg_url: str, seed: int = 2026, engine: str = "compressor"
) -> dict[str, Counter[str]]:
    steps, facts = build(seed)
    started = time.perf_counter()
    async with fresh_database(kind, postgres_url=pg_url, durable=False) as url:
        info = await run_chats(url, steps, engine)
        store = await Store.open(url)
        try:
            results = {chat: await classify(store, chat, chat_facts) for chat, chat_facts in facts.items()}
            compactions: Counter[str] = Counter()
            for chat_id in facts:
                chat = await store.get_or_create_chat("telegram", chat_id, kind="private", title=None)
                for (trigger, outcome), n in (await store.chat_stats(chat.id)).compactions.items():
                    compactions[f"{trigger} {outcome}"] += n
        finally:
            await store.close()
    days = (steps[-1].at - steps[0].at) / DAY
    print(
        f"fidelity[{kind}] engine {engine}: {info['server']} server-side compactions; "
        f"{len(steps)} messages over {days:.1f} days, {info['calls']} API calls, "
        f"{time.perf_counter() - started:.0f}s; compactions: "
        + ", ".join(f"{k} {v}" for k, v in sorted(compactions.items())),
        flush=True,
    )
    return results


def print_table(kind: str, results: dict[str, Counter[str]]) -> None:
    print(f"fidelity[{kind}] {'chat':10s} " + " ".join(f"{c:>8s}" for c in CLASSES))
    for chat, counts in results.items():
        total = sum(counts.values())
        shares = " ".join(f"{counts[c]:>3d} {counts[c] / total:4.0%}" for c in CLASSES)
        print(f"fidelity[{kind}] {chat:10s} {shares}")
    lost = sum(c["lost"] for c in results.values())
    print(f"fidelity[{kind}] lost: {lost} of {sum(sum(c.values()) for c in results.values())} (target 0)")


async def run(
    *, dbs: Sequence[str], pg_url: str = DEFAULT_POSTGRES_URL, engine: str = "compressor"
) -> dict[str, dict[str, Counter[str]]]:
    out: dict[str, dict[str, Counter[str]]] = {}
    for kind in dbs:
        out[kind] = await run_one(kind, pg_url, engine=engine)
        print_table(kind, out[kind])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--engine", choices=["compressor", "server"], default="compressor")
    args = parser.parse_args()
    dbs = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    asyncio.run(run(dbs=dbs, pg_url=args.postgres_url, engine=args.engine))


if __name__ == "__main__":
    main()
