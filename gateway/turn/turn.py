"""One chat's turn as a value (`Turn`), and the request window it sends, over stored rows.

A turn is built once its session is settled (compacted first where it must be, a pin change told):
the chat, the snapshot the turn runs on, the context engine built for that session row, the cache state
and the turn's cache plan, and the window. It is frozen: a session row that moves before the turn's
first request is read again and gets an engine of its own, so every step of the turn reads the same
session. Only the engine inside changes while the turn runs (the loop and the compactor update it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent.caching.plan import CacheState, TurnCachePlan
from agent.compaction.engine import ContextEngine
from agent.loop import Entry
from agent.tokens import Calibration
from gateway.compaction.compactor import CompactionReport
from gateway.compaction.request_window import build_window
from gateway.platforms.base import ChatRef
from gateway.store import SessionRecord, StoredMessage, TurnSnapshot
from gateway.store.records import PIN_NOTICE_AUTHOR

Ref = tuple[int, ...]
"""The stored message ids one window message stands for (same-role neighbours are merged)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """What every step of one turn reads, built once before its first request."""

    chat: ChatRef
    snapshot: TurnSnapshot
    """The session the turn runs on (after a compaction before it, with its pins told) and its rows."""
    pending: tuple[StoredMessage, ...]
    """The stored messages the turn answers, in order."""
    engine: ContextEngine
    cache: CacheState
    """The session's cache state as the turn found it: what its plan starts from."""
    window: tuple[Entry[Ref], ...]
    """The request window of the snapshot's rows (old media demoted where that pays)."""
    plan: TurnCachePlan
    compaction: CompactionReport | None
    """The compaction run right before the turn (hygiene, cache-aware), if one ran."""

    @property
    def session(self) -> SessionRecord:
        return self.snapshot.session

    @property
    def pins(self) -> tuple[str, ...]:
        return self.snapshot.pins

    @property
    def chat_pk(self) -> int:
        return self.snapshot.session.chat_pk

    @property
    def reply_to(self) -> str | None:
        """The platform id of the newest message answered: the reply answers it."""
        return self.pending[-1].platform_message_id

    @property
    def after_id(self) -> int | None:
        """The newest stored row when the turn started: the turn's messages are stored after it."""
        return self.snapshot.rows[-1].id if self.snapshot.rows else None

    @property
    def compacted_before(self) -> bool:
        """The session was compacted right before the turn (one compaction per turn)."""
        return self.compaction is not None and self.compaction.changed


def window_entries(rows: Sequence[StoredMessage], *, system_notes: bool = False) -> list[Entry[Ref]]:
    """The request window of stored rows (same-role neighbours merged), each with its row ids; with
    `system_notes`, the gateway's notes to the model go as mid-conversation system messages."""
    as_system = is_pin_note if system_notes else None
    return [Entry(i.message, i.ids) for i in build_window(rows, as_system=as_system)]


def is_pin_note(row: StoredMessage) -> bool:
    return row.author_id == PIN_NOTICE_AUTHOR


def newest_id(ref: Ref | None) -> int | None:
    """The stored message id a window message stands for (the newest row of a merged message)."""
    return max(ref) if ref else None


def tokens_after_in(rows: Sequence[StoredMessage], calibration: Calibration) -> Callable[[int], int]:
    """`tokens_after(id)`: the calibrated size of the window rows stored after message `id` (all of
    them for an id not in the window)."""
    position = {r.id: i for i, r in enumerate(rows)}

    def tokens_after(message_id: int) -> int:
        start = position.get(message_id, -1) + 1
        return calibration.apply(sum(r.token_estimate for r in rows[start:]))

    return tokens_after
