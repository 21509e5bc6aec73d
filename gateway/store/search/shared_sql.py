"""SQL pieces both databases' keyword rankers share (plain SQL text with named bind parameters)."""

from __future__ import annotations

from typing import Any

AUTHOR_BOOST = 2.0
"""Score factor for a message written by someone the query names (see search_terms.split_authors)."""


def author_factor(column: str, authors: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """(SQL factor, its parameters): AUTHOR_BOOST when `column` is one of `authors`, else 1."""
    if not authors:
        return "1.0", {}
    names = ", ".join(f":author{i}" for i in range(len(authors)))
    params = {f"author{i}": name for i, name in enumerate(authors)}
    return f"(CASE WHEN {column} IN ({names}) THEN {AUTHOR_BOOST} ELSE 1.0 END)", params
