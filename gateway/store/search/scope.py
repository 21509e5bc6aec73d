"""What a recall search may return, defined once for the keyword side, the semantic side and the rows.

In scope: the chat's messages people or the assistant wrote (tool results and compaction summaries are
not indexed, so they have neither keywords nor vectors), active or archived, inside the query's dates,
and not in the model's window whole right now (active messages of the current session shorter than
`shown_below`). Both rankings filter by it before they take their top candidates, so a message the
model already sees never uses up a rank position.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection

from gateway.store.tables import UTCDateTime

SHOWN_WHOLE_BELOW = 20_000
"""Active messages of the chat's current session shorter than this are in the model's window in full,
so a search skips them; longer ones may be shown shortened and stay searchable."""


@dataclass(frozen=True, slots=True)
class Scope:
    chat_pk: int
    after: datetime | None = None
    """From this instant on (inclusive)."""
    before: datetime | None = None
    """Before this instant (exclusive)."""
    shown_below: int = SHOWN_WHOLE_BELOW
    """Active messages of the current session shorter than this are in the window whole."""

    def admits_time(self, created: datetime) -> bool:
        return (self.after is None or created >= self.after) and (
            self.before is None or created < self.before
        )


@dataclass(frozen=True, slots=True)
class Candidates:
    """The scope resolved for a ranking that filters in memory (the semantic side)."""

    scope: Scope
    window: frozenset[int]
    """Ids the model sees whole now."""


def window_ids_sql() -> str:
    """Ids of the active session's messages the model sees whole (binds :chat, :shown_below)."""
    return (
        "SELECT id FROM messages WHERE session_pk = "
        "(SELECT id FROM sessions WHERE chat_pk = :chat AND active) "
        "AND state = 'active' AND length(text) < :shown_below"
    )


def dates_sql(column: str, after: datetime | None, before: datetime | None) -> tuple[str, list[Any]]:
    """(" AND ..." SQL, its bound parameters :after / :before) keeping `column` within the dates."""
    sql = ""
    params = []
    if after is not None:
        sql += f" AND {column} >= :after"
        params.append(bindparam("after", after, type_=UTCDateTime()))
    if before is not None:
        sql += f" AND {column} < :before"
        params.append(bindparam("before", before, type_=UTCDateTime()))
    return sql, params


def admits_row(scope: Scope, row: Any, active_session: int | None) -> bool:
    """A read message row (created_at, state, author_id, session_pk, text) is in scope."""
    if not scope.admits_time(row.created_at):
        return False
    if row.state not in ("active", "archived") or row.author_id == "tool":
        return False
    in_window = row.session_pk == active_session and row.state == "active"
    return not (in_window and len(row.text) < scope.shown_below)


async def candidates(conn: AsyncConnection, scope: Scope) -> Candidates:
    rows = await conn.execute(
        text(window_ids_sql()), {"chat": scope.chat_pk, "shown_below": scope.shown_below}
    )
    return Candidates(scope=scope, window=frozenset(int(r.id) for r in rows))
