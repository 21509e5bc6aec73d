"""Seeded multi-day chat traces for the cost benchmark: what arrives, when, and what the bot is asked.

Three families, each a list of `Event`s in time order (seconds from the trace start, a Monday 00:00 UTC):

- private: one person, one chat, awake 07:00-23:30, a message every 8-55 minutes, every one answered;
- group: eight people chatting in bursts (a message every 5-90 s, then 20-150 quiet minutes), the bot
  addressed in a few messages only, long quiet nights, so the morning's first question meets a night's
  worth of unanswered chatter;
- tools: working sessions of 20-90 minutes, a message every 1-6 minutes, each answered after one to
  three scripted tool rounds (`current_time`, `recall`);
- help: short one-to-one help bursts (10-40 messages in under an hour, once or twice a day per chat)
  with human request timing: gaps log-normal with a median of 60 s, 86% within 5 minutes, 98% within
  an hour (the timing measured on public chat logs);
- groupday: long group days with quiet nights: chatter in bursts from morning to late evening, the bot
  addressed now and then, and each time often drawn into a short exchange (follow-ups with the same
  human timing), nothing between midnight and morning (four such groups: one group's two days hold
  about thirty requests, too few to judge a policy by);
- ended: one-to-one chats of many short conversations that end: two to six a day in waking hours, each
  one to ten requests with the human timing above, then silence until the next one, one to eight hours
  later (log-uniform: a return soon after the hour is as likely as one after a few hours);
  the person got an answer and left, which the prior timing within a conversation does not know;
- visitors: many one-to-one chats that are mostly a single short conversation (one to twelve requests with
  the human timing above): a person tries the bot, gets an answer and leaves; about a third come back
  once or twice, hours to days later. What a public bot sees most, and the hardest case for a keep-alive
  that cannot tell a pause from an end: after the last answer nobody comes back within the hour;
- documents: a long-lived work chat in which documents are pasted (half the messages carry one of
  2,000-10,000 words), growing by ~150K tokens a day: the only family that reaches the compaction
  thresholds of a 200K-1M planned window (`bench_cost --planned`; not in the main table).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

START = datetime(2026, 11, 16, tzinfo=UTC)
DAY = 86_400.0
MINUTE = 60.0
FAMILIES = ("private", "group", "tools", "help", "groupday", "ended", "visitors")
LONG_FAMILIES = ("documents",)
"""Families replayed only by `bench_cost --planned` (days of large prompts)."""

_TEXT = (
    "the deploy failed again after we moved the config to staging so maybe check the logs before lunch "
    "i think the invoice for march is still missing and the client asked twice about the new pricing "
    "can you remind me what we decided about the database migration and the backup schedule tonight "
    "weather looks fine for the trip on saturday but the train tickets are expensive this week "
    "the kids have a school concert on thursday evening and somebody needs to pick up the cake "
    "please summarize the discussion about the roadmap and the hiring plan for the next quarter"
)
_WORDS = _TEXT.split()
_NAMES = ("Anna", "Boris", "Chen", "Dana", "Emeka", "Fatima", "Goran", "Hana")


@dataclass(frozen=True, slots=True)
class Event:
    """One incoming message; `tool_rounds` are the tool calls the model makes before answering it."""

    at: float
    chat_id: str
    group: bool
    user_id: str
    name: str
    text: str
    addressed: bool
    tool_rounds: tuple[tuple[dict[str, Any], ...], ...] = field(default=())


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def private_chat(rng: random.Random, chat_id: str, *, days: int) -> list[Event]:
    events: list[Event] = []
    for day in range(days):
        t = day * DAY + rng.uniform(7.0, 9.5) * 3600
        end = day * DAY + rng.uniform(21.0, 23.5) * 3600
        while t < end:
            long_paste = rng.random() < 0.08
            text = _sentence(rng, 150, 400) if long_paste else _sentence(rng, 6, 60)
            events.append(Event(t, chat_id, False, f"{chat_id}-u", "Sam", text, True))
            t += rng.uniform(8.0, 55.0) * MINUTE
    return events


def group_chat(rng: random.Random, chat_id: str, *, days: int, address_rate: float = 0.04) -> list[Event]:
    events: list[Event] = []
    members = [(f"{chat_id}-{i}", name) for i, name in enumerate(_NAMES)]
    for day in range(days):
        t = day * DAY + rng.uniform(7.5, 9.0) * 3600
        end = day * DAY + rng.uniform(23.0, 25.5) * 3600  # some nights run past midnight
        while t < end:
            for _ in range(rng.randint(8, 60)):
                user_id, name = rng.choice(members)
                addressed = rng.random() < address_rate
                text = ("@bot " if addressed else "") + _sentence(rng, 3, 40)
                events.append(Event(t, chat_id, True, user_id, name, text, addressed))
                t += rng.uniform(5.0, 90.0)
            t += rng.uniform(20.0, 150.0) * MINUTE
    return events


def _tool_round(rng: random.Random) -> tuple[dict[str, Any], ...]:
    if rng.random() < 0.4:
        return ({"name": "current_time", "input": {}},)
    calls: list[dict[str, Any]] = [{"name": "recall", "input": {"query": rng.choice(_WORDS)}}]
    if rng.random() < 0.3:
        calls.append({"name": "current_time", "input": {}})
    return tuple(calls)


def tool_session(rng: random.Random, chat_id: str, *, days: int) -> list[Event]:
    events: list[Event] = []
    for day in range(days):
        t = day * DAY + rng.uniform(8.5, 10.0) * 3600
        for _ in range(rng.randint(2, 4)):
            session_end = t + rng.uniform(20.0, 90.0) * MINUTE
            while t < session_end:
                rounds = tuple(_tool_round(rng) for _ in range(rng.randint(1, 3)))
                events.append(
                    Event(t, chat_id, False, f"{chat_id}-u", "Dev", _sentence(rng, 8, 80), True, rounds)
                )
                t += rng.uniform(1.0, 6.0) * MINUTE
            t += rng.uniform(1.0, 4.0) * 3600
    return events


HUMAN_MEDIAN_GAP = 60.0
HUMAN_GAP_SIGMA = math.log(5.0) / 1.08
"""ln-scale spread putting 86% of gaps within 5 minutes (z = 1.08) around a 60 s median."""


def human_gap(rng: random.Random) -> float:
    """Seconds to a person's next request in a conversation (at least 5 s)."""
    return max(5.0, rng.lognormvariate(math.log(HUMAN_MEDIAN_GAP), HUMAN_GAP_SIGMA))


def help_chat(rng: random.Random, chat_id: str, *, days: int) -> list[Event]:
    events: list[Event] = []
    for day in range(days):
        t = day * DAY + rng.uniform(8.0, 12.0) * 3600
        for _ in range(rng.randint(1, 2)):
            end = t + 3600.0
            for _ in range(rng.randint(10, 40)):
                if t >= end:
                    break
                long_paste = rng.random() < 0.1
                text = _sentence(rng, 150, 400) if long_paste else _sentence(rng, 4, 40)
                events.append(Event(t, chat_id, False, f"{chat_id}-u", "Kim", text, True))
                t += human_gap(rng)
            t += rng.uniform(2.0, 6.0) * 3600
    return events


def group_day(rng: random.Random, chat_id: str, *, days: int, address_rate: float = 0.02) -> list[Event]:
    events: list[Event] = []
    members = [(f"{chat_id}-{i}", f"{name}{i}") for i, name in enumerate(_NAMES * 2)]
    for day in range(days):
        t = day * DAY + rng.uniform(7.0, 9.0) * 3600
        end = day * DAY + rng.uniform(22.5, 23.9) * 3600
        while t < end:
            for _ in range(rng.randint(5, 80)):
                user_id, name = rng.choice(members)
                addressed = rng.random() < address_rate
                events.append(Event(t, chat_id, True, user_id, name, _chatter(rng, addressed), addressed))
                t += rng.uniform(5.0, 120.0)
                while addressed and rng.random() < 0.6:  # an exchange with the bot
                    t += human_gap(rng)
                    events.append(Event(t, chat_id, True, user_id, name, _chatter(rng, True), True))
            t += rng.uniform(10.0, 180.0) * MINUTE
    return events


def ended_chat(rng: random.Random, chat_id: str, *, days: int) -> list[Event]:
    events: list[Event] = []
    for day in range(days):
        t = day * DAY + rng.uniform(8.0, 12.0) * 3600
        for _ in range(rng.randint(2, 6)):
            if t > day * DAY + 23.0 * 3600:
                break
            for _ in range(rng.randint(1, 10)):
                long_paste = rng.random() < 0.1
                text = _sentence(rng, 150, 400) if long_paste else _sentence(rng, 4, 40)
                events.append(Event(t, chat_id, False, f"{chat_id}-u", "Lee", text, True))
                t += human_gap(rng)
            t += 3600.0 * math.exp(rng.uniform(0.0, math.log(8.0)))  # the next one 1-8 hours later
    return events


def visitor_chat(rng: random.Random, chat_id: str, *, days: int) -> list[Event]:
    events: list[Event] = []
    t = rng.uniform(0.0, days * DAY * 0.6)
    for _ in range(1 + (rng.random() < 0.35) + (rng.random() < 0.15)):
        for _ in range(rng.randint(1, 12)):
            long_paste = rng.random() < 0.1
            text = _sentence(rng, 150, 400) if long_paste else _sentence(rng, 4, 40)
            events.append(Event(t, chat_id, False, f"{chat_id}-u", "Max", text, True))
            t += human_gap(rng)
        t += rng.uniform(3.0, 30.0) * 3600  # back hours to a day later, if at all
    return events


def documents_chat(rng: random.Random, chat_id: str, *, days: int) -> list[Event]:
    events: list[Event] = []
    for day in range(days):
        t = day * DAY + rng.uniform(8.5, 9.5) * 3600
        end = day * DAY + rng.uniform(17.5, 18.5) * 3600
        while t < end:
            document = rng.random() < 0.5
            text = _sentence(rng, 2_000, 10_000) if document else _sentence(rng, 6, 60)
            events.append(Event(t, chat_id, False, f"{chat_id}-u", "Ana", text, True))
            t += rng.uniform(2.0, 20.0) * MINUTE
    return events


def _chatter(rng: random.Random, addressed: bool) -> str:
    return ("@bot " if addressed else "") + _sentence(rng, 3, 40)


@dataclass(frozen=True, slots=True)
class TraceSizes:
    """How much of each family one run replays (chats x days)."""

    private_chats: int = 3
    private_days: int = 3
    groups: int = 2
    group_days: int = 3
    tool_chats: int = 2
    tool_days: int = 1
    help_chats: int = 4
    help_days: int = 2
    long_group_days: int = 2
    long_groups: int = 4
    ended_chats: int = 8
    ended_days: int = 2
    visitor_chats: int = 24
    visitor_days: int = 2
    document_chats: int = 1
    document_days: int = 4


def generate(family: str, *, seed: int = 2026, sizes: TraceSizes | None = None) -> list[Event]:
    """All chats of one family merged in time order; the same seed always gives the same trace."""
    sizes = sizes or TraceSizes()
    rng = random.Random(f"{family}:{seed}")
    events: list[Event] = []
    if family == "private":
        for i in range(sizes.private_chats):
            events += private_chat(rng, f"p{i}", days=sizes.private_days)
    elif family == "group":
        for i in range(sizes.groups):
            events += group_chat(rng, f"g{i}", days=sizes.group_days)
    elif family == "tools":
        for i in range(sizes.tool_chats):
            events += tool_session(rng, f"t{i}", days=sizes.tool_days)
    elif family == "help":
        for i in range(sizes.help_chats):
            events += help_chat(rng, f"h{i}", days=sizes.help_days)
    elif family == "groupday":
        for i in range(sizes.long_groups):
            events += group_day(rng, f"d{i}", days=sizes.long_group_days)
    elif family == "ended":
        for i in range(sizes.ended_chats):
            events += ended_chat(rng, f"e{i}", days=sizes.ended_days)
    elif family == "visitors":
        for i in range(sizes.visitor_chats):
            events += visitor_chat(rng, f"v{i}", days=sizes.visitor_days)
    elif family == "documents":
        for i in range(sizes.document_chats):
            events += documents_chat(rng, f"w{i}", days=sizes.document_days)
    else:
        known = ", ".join((*FAMILIES, *LONG_FAMILIES))
        raise ValueError(f"unknown trace family {family!r}; known: {known}")
    events.sort(key=lambda e: (e.at, e.chat_id))
    return events


def describe(events: list[Event]) -> dict[str, float]:
    """Counts a reader needs to judge a trace: messages, addressed ones, chats, days."""
    chats = {e.chat_id for e in events}
    span = (events[-1].at - events[0].at) / DAY if events else 0.0
    return {
        "messages": len(events),
        "addressed": sum(1 for e in events if e.addressed),
        "tool_calls": sum(len(r) for e in events for r in e.tool_rounds),
        "chats": len(chats),
        "days": round(span, 1),
    }


if __name__ == "__main__":
    for name in (*FAMILIES, *LONG_FAMILIES):
        print(name, describe(generate(name)))
