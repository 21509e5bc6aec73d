"""How far a chat's keep-alive forecasts have held: predicted against realized follow-ups.

A keep-alive decision (`agent.caching.keepalive`) is taken on the forecast's odds that the chat's next
request comes within the entry's renewed life. Those odds come from the chat's gaps and its kind's
prior; for a chat whose long silences are mostly its end of day, they can stay high while nobody comes
back, and for one that returns more often than its few gaps show, low. `RefreshRecord` keeps, per
session, the recency-weighted sum of the odds of its decisions (refreshes sent, and entries let go
although the forecast gave them a chance: `expected`) and how many were followed by a request within
that life (`came`). `trust` is their ratio shrunk toward 1 with the weight of `PRIOR` follow-ups (the
mean of a Gamma belief about the factor on the odds, updated by Poisson counts), and the next refresh
decision scales its odds by it. Each unused refresh lowers it by what its odds promised, so a chat
whose confident refreshes go unused is trusted less quickly than one whose long shots do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

PRIOR: Final = 1.0
"""Follow-ups' worth of belief that the forecast is right, before the chat has shown otherwise."""
DECAY: Final = 0.9
"""Weight kept by the older decisions at each settled one (about the last ten count)."""
MAX_TRUST: Final = 2.0
"""A chat that came back more often than forecast may at most double its odds."""


@dataclass(frozen=True, slots=True)
class Pending:
    """The session's last decision, not yet settled: when (seconds since the epoch), the renewed
    entry's life (seconds), the forecast's odds of a request within it, and which entry life it was
    taken on (the stored message id of the entry and when that life began; id -1: not recorded)."""

    at: float
    life: float
    odds: float
    entry_id: int = -1
    entry_at: float = 0.0

    def about(self, message_id: int, life_began: float) -> bool:
        """Whether this decision was taken on the entry `message_id` in the life that began at
        `life_began` (a later look at the same life is the same forecast, not a new decision)."""
        return self.entry_id == message_id and self.entry_at == life_began


@dataclass(frozen=True, slots=True)
class RefreshRecord:
    expected: float = 0.0
    came: float = 0.0
    pending: Pending | None = None

    def trust(self) -> float:
        """The factor on the forecast's odds when deciding on a refresh. A pending decision counts as
        unused: a decision is made only in an entry's last moments, so the request it was taken for
        has not come in its renewed life (a request would have settled it)."""
        record = self._settle(came=False) if self.pending else self
        return min((record.came + PRIOR) / (record.expected + PRIOR), MAX_TRUST)

    def predicted(
        self, at: float, *, life: float, odds: float, entry: tuple[int, float] = (-1, 0.0)
    ) -> RefreshRecord:
        """After a decision at `at` (refresh sent or not) on `entry` (its message id and when the life
        decided on began) that gave the next request `odds` of coming within `life` seconds: the
        decision before it (no request came since, or a turn would have settled it) was not followed
        in time."""
        settled = self._settle(came=False) if self.pending else self
        return RefreshRecord(settled.expected, settled.came, Pending(at, life, odds, *entry))

    def settled(self, request_at: float) -> RefreshRecord:
        """After the chat's next request (a turn's start at `request_at`)."""
        if self.pending is None:
            return self
        return self._settle(came=request_at <= self.pending.at + self.pending.life)

    def _settle(self, *, came: bool) -> RefreshRecord:
        assert self.pending is not None
        return RefreshRecord(
            DECAY * self.expected + self.pending.odds, DECAY * self.came + (1.0 if came else 0.0)
        )

    def to_json(self) -> list[float]:
        p = self.pending
        return [self.expected, self.came, *((p.at, p.life, p.odds, p.entry_id, p.entry_at) if p else ())]

    @classmethod
    def from_json(cls, raw: Sequence[float] | None) -> RefreshRecord:
        if not raw:
            return cls()
        values = [float(x) for x in raw]
        pending = None
        if len(values) >= 5:  # the entry is missing from records written before decisions named it
            at, life, odds = values[2:5]
            entry_id, entry_at = (int(values[5]), values[6]) if len(values) >= 7 else (-1, 0.0)
            pending = Pending(at, life, odds, entry_id, entry_at)
        return cls(values[0], values[1], pending)
