"""Names of the full-text index objects that live outside the SQLAlchemy models.

The index is made of database-specific objects (FTS5 virtual tables and their shadow tables on SQLite,
a `tsvector` table with functions and triggers on Postgres), created by migration 0005 and kept up to
date by triggers. Their names all start with `search_`, so schema comparisons can leave them out.
"""

from __future__ import annotations

SEARCH_PREFIX = "search_"

SQLITE_WORDS = "search_words"
"""FTS5 (porter unicode61): columns body, author; rowid = messages.id."""
SQLITE_GRAMS = "search_grams"
"""FTS5 (trigram) over messages with unsegmented text; each row ends in a newline."""
SQLITE_GRAMS_VOCAB = "search_grams_vocab"
"""fts5vocab (row) over search_grams: trigram -> number of rows holding it."""
PG_DOCS = "search_docs"
"""Postgres: message_id, chat_pk, created_at, doc tsvector (GIN)."""


def is_search_index(name: str | None) -> bool:
    """True for the index's own tables (never part of the models' metadata)."""
    return bool(name) and str(name).startswith(SEARCH_PREFIX)


def include_name(name: str | None, type_: str, _parent: object) -> bool:
    """Alembic `include_name` hook: compare everything but the search index's tables."""
    return not (type_ == "table" and is_search_index(name))
