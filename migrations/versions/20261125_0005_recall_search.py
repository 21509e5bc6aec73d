"""Recall: a ranked full-text index over every chat's messages, kept by triggers; stored embeddings.

The index covers what people and the assistant said: non-empty rows inserted as 'active' that are not
tool results (so compaction summaries, tool output and bare tool calls stay out), and the first 100,000
characters of each. Existing rows are indexed here; afterwards a trigger adds each new row in the
same transaction as its insert, and deleting a message deletes its index entry.

SQLite: `search_words` (FTS5, Porter stemming over Unicode words, diacritics folded) and
`search_grams` (FTS5 trigrams of the messages that contain text written without spaces: Chinese,
Japanese, Korean, Thai, Lao, Khmer, Myanmar). A newline is appended to each gram row so every
two-character substring starts some trigram, and a query can look two-character words up through
`search_grams_vocab`.

Postgres: `search_docs` holds one `tsvector` per message (English stemming of the words with accents
folded, unigrams and bigrams of unsegmented scripts) with a GIN index, built by `search_document()`.

Both: `search_authors` lists the names that have written in each chat, so a query can tell "Melanie" the
author from "melanie" the word.

Revision ID: 0005
Revises: 0006
Create Date: 2026-11-25 09:00:00
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# ruff: noqa: S608 - the DDL interpolates this module's constants only

revision: str = "0005"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

logger = logging.getLogger(__name__)

INDEXED_CHARS = 100_000
GRAM_CHARS = 20_000
"""Postgres: unsegmented text beyond this is not split into grams (keeps a tsvector under its 1 MB cap)."""

# Scripts written without spaces between words (a copy of gateway.store.search.terms.UNSEGMENTED).
_RANGES = (
    "\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f"
)
_INDEXED = "new.state = 'active' AND new.author_id IS NOT 'tool' AND new.text <> ''"
_EXISTING = (
    "author_id IS NOT 'tool' AND text <> '' AND state IN ('active', 'archived') AND id NOT IN "
    "(SELECT summary_message_id FROM compactions WHERE summary_message_id IS NOT NULL)"
)


def _sqlite_upgrade() -> None:
    body = f"substr(new.text, 1, {INDEXED_CHARS})"
    has_grams = f"new.text GLOB '*[{_RANGES}]*'"
    words = "porter unicode61 remove_diacritics 2"
    op.execute(f"CREATE VIRTUAL TABLE search_words USING fts5(body, tokenize = '{words}')")
    op.execute("CREATE VIRTUAL TABLE search_grams USING fts5(body, tokenize = 'trigram')")
    op.execute("CREATE VIRTUAL TABLE search_grams_vocab USING fts5vocab(search_grams, row)")
    op.execute(
        "CREATE TABLE search_authors (chat_pk INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE, "
        "name TEXT NOT NULL, PRIMARY KEY (chat_pk, name)) WITHOUT ROWID"
    )
    op.execute(
        f"""CREATE TRIGGER search_messages_insert AFTER INSERT ON messages WHEN {_INDEXED}
        BEGIN
            INSERT INTO search_words(rowid, body) VALUES (new.id, {body});
            INSERT INTO search_grams(rowid, body) SELECT new.id, {body} || char(10) WHERE {has_grams};
            INSERT OR IGNORE INTO search_authors(chat_pk, name)
                SELECT new.chat_pk, new.author_name WHERE coalesce(new.author_name, '') <> '';
        END"""
    )
    op.execute(
        """CREATE TRIGGER search_messages_delete AFTER DELETE ON messages
        BEGIN
            DELETE FROM search_words WHERE rowid = old.id;
            DELETE FROM search_grams WHERE rowid = old.id;
        END"""
    )
    op.execute(
        f"""CREATE TRIGGER search_messages_update AFTER UPDATE OF text ON messages
        WHEN EXISTS (SELECT 1 FROM search_words WHERE rowid = new.id)
        BEGIN
            UPDATE search_words SET body = {body} WHERE rowid = new.id;
            DELETE FROM search_grams WHERE rowid = new.id;
            INSERT INTO search_grams(rowid, body) SELECT new.id, {body} || char(10) WHERE {has_grams};
        END"""
    )
    existing = _EXISTING
    op.execute(
        "INSERT INTO search_words(rowid, body) "
        f"SELECT id, substr(text, 1, {INDEXED_CHARS}) FROM messages WHERE {existing}"
    )
    op.execute(
        f"INSERT INTO search_grams(rowid, body) SELECT id, substr(text, 1, {INDEXED_CHARS}) || char(10) "
        f"FROM messages WHERE {existing} AND text GLOB '*[{_RANGES}]*'"
    )
    op.execute(
        "INSERT OR IGNORE INTO search_authors(chat_pk, name) SELECT DISTINCT chat_pk, author_name "
        f"FROM messages WHERE {existing} AND coalesce(author_name, '') <> ''"
    )


def _sqlite_downgrade() -> None:
    for trigger in ("search_messages_insert", "search_messages_delete", "search_messages_update"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    for table in ("search_authors", "search_grams_vocab", "search_grams", "search_words"):
        op.execute(f"DROP TABLE IF EXISTS {table}")


def _postgres_text_config() -> None:
    """`search_english`: English stemming with accents folded (unaccent, from contrib) when the server
    has it; without it accents stay significant rather than the migration failing."""
    op.execute("CREATE TEXT SEARCH CONFIGURATION search_english (COPY = pg_catalog.english)")
    bind = op.get_bind()
    try:
        with bind.begin_nested():
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS unaccent")
    except sa.exc.DBAPIError as exc:
        logger.warning("extension unaccent unavailable (%s); recall will not fold accents", exc.orig)
        return
    op.execute(
        "ALTER TEXT SEARCH CONFIGURATION search_english "
        "ALTER MAPPING FOR hword, hword_part, word WITH unaccent, english_stem"
    )


def _postgres_upgrade() -> None:
    _postgres_text_config()
    op.execute(
        f"""CREATE FUNCTION search_grams(body text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT coalesce(string_agg(
                CASE WHEN i < cardinality(c) THEN c[i] || ' ' || c[i] || c[i + 1] ELSE c[i] END, ' '), '')
            FROM regexp_matches(left(body, {GRAM_CHARS}), '[{_RANGES}]+', 'g') AS m(run),
                LATERAL regexp_split_to_array(m.run[1], '') AS c,
                LATERAL generate_series(1, cardinality(c)) AS i
        $$"""
    )
    op.execute(
        f"""CREATE FUNCTION search_document(body text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT to_tsvector('search_english',
                       regexp_replace(left(body, {INDEXED_CHARS}), '[{_RANGES}]+', ' ', 'g'))
                || to_tsvector('pg_catalog.simple', search_grams(body))
        $$"""
    )
    op.execute(
        """CREATE FUNCTION search_index_message() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO search_docs (message_id, chat_pk, created_at, author, doc)
                    VALUES (NEW.id, NEW.chat_pk, NEW.created_at, NEW.author_name, search_document(NEW.text));
                IF coalesce(NEW.author_name, '') <> '' THEN
                    INSERT INTO search_authors (chat_pk, name) VALUES (NEW.chat_pk, NEW.author_name)
                        ON CONFLICT DO NOTHING;
                END IF;
            ELSE
                UPDATE search_docs SET doc = search_document(NEW.text)
                    WHERE message_id = NEW.id;
            END IF;
            RETURN NULL;
        END
        $$"""
    )
    op.create_table(
        "search_docs",
        sa.Column("message_id", sa.BigInteger(), nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("author", sa.Text(), nullable=True),
        sa.Column("doc", postgresql.TSVECTOR(), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("message_id"),
    )
    op.create_table(
        "search_authors",
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["chat_pk"], ["chats.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("chat_pk", "name"),
    )
    op.execute(
        "CREATE TRIGGER search_messages_insert AFTER INSERT ON messages FOR EACH ROW "
        "WHEN (NEW.state = 'active' AND NEW.author_id IS DISTINCT FROM 'tool' AND NEW.text <> '') "
        "EXECUTE FUNCTION search_index_message()"
    )
    op.execute(
        "CREATE TRIGGER search_messages_update AFTER UPDATE OF text ON messages FOR EACH ROW "
        "WHEN (OLD.text IS DISTINCT FROM NEW.text) "
        "EXECUTE FUNCTION search_index_message()"
    )
    existing = _EXISTING.replace("IS NOT 'tool'", "IS DISTINCT FROM 'tool'")
    op.execute(
        "INSERT INTO search_docs (message_id, chat_pk, created_at, author, doc) "
        f"SELECT id, chat_pk, created_at, author_name, search_document(text) FROM messages WHERE {existing}"
    )
    op.execute(
        "INSERT INTO search_authors (chat_pk, name) SELECT DISTINCT chat_pk, author_name FROM messages "
        f"WHERE {existing} AND coalesce(author_name, '') <> ''"
    )
    op.execute("CREATE INDEX search_docs_doc ON search_docs USING gin (doc)")
    op.execute("CREATE INDEX search_docs_chat ON search_docs (chat_pk, created_at)")


def _postgres_downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS search_messages_update ON messages")
    op.execute("DROP TRIGGER IF EXISTS search_messages_insert ON messages")
    op.drop_table("search_authors")
    op.drop_table("search_docs")
    op.execute("DROP FUNCTION IF EXISTS search_index_message()")
    op.execute("DROP FUNCTION IF EXISTS search_document(text)")
    op.execute("DROP FUNCTION IF EXISTS search_grams(text)")
    op.execute("DROP TEXT SEARCH CONFIGURATION IF EXISTS search_english")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _postgres_upgrade()
    else:
        _sqlite_upgrade()
    op.create_table(
        "message_vectors",
        sa.Column("message_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("chat_pk", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=False),
        sa.Column("dims", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["chat_pk"], ["chats.id"], name=op.f("fk_message_vectors_chat_pk_chats"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["messages.id"],
            name=op.f("fk_message_vectors_message_id_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("message_id", name=op.f("pk_message_vectors")),
    )
    op.create_index(
        "ix_message_vectors_chat_pk_message_id", "message_vectors", ["chat_pk", "message_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_message_vectors_chat_pk_message_id", table_name="message_vectors")
    op.drop_table("message_vectors")
    if op.get_bind().dialect.name == "postgresql":
        _postgres_downgrade()
    else:
        _sqlite_downgrade()
