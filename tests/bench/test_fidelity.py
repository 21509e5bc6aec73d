"""The fidelity benchmark's plan: unique facts whose recall queries do not give the answer away."""

from __future__ import annotations

import random

from bench.bench_fidelity import COMPACT_EVERY, FACTS_PER_CHAT, PIN_EVERY, build, make_facts


def test_facts_are_unique_and_queries_do_not_contain_the_marker() -> None:
    facts = make_facts(random.Random(7), 100)
    assert len({f.marker for f in facts}) == 100
    assert {f.kind for f in facts} == {"code", "amount", "name", "decision"}
    for fact in facts:
        assert fact.marker in fact.text
        assert fact.marker not in fact.query


def test_every_fact_is_said_and_some_are_pinned_and_compacted_by_hand() -> None:
    steps, facts = build(2026)
    texts = [s.event.text for s in steps if s.command is None]
    for chat_facts in facts.values():
        assert len(chat_facts) == FACTS_PER_CHAT
        assert all(f.text in texts for f in chat_facts)
    pins = [s for s in steps if s.command == "pin"]
    compacts = [s for s in steps if s.command == "compact"]
    assert len(pins) == 2 * (FACTS_PER_CHAT // PIN_EVERY)
    assert len(compacts) == 2 * (FACTS_PER_CHAT // COMPACT_EVERY)
    assert [s.at for s in steps] == sorted(s.at for s in steps)
