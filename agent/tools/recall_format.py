"""How recalled history reads to the model: tagged, quoted data with its date, author and session.

Each result is `<recalled ...>text</recalled>`; stored text can never close the tag, so nothing in it
reads as an instruction outside the quote. Partial excerpts say which characters they hold, so the
model knows it can read the rest with `message_id` and `offset`.
"""

from __future__ import annotations

import re

from agent.tools.recall_types import Excerpt, OriginalsPage, RecallHit, SessionLabel

TAG = "recalled"
_CLOSING_TAG = re.compile(rf"</\s*{TAG}\s*>", re.IGNORECASE)


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _body(text: str) -> str:
    return _CLOSING_TAG.sub(f"<\\/{TAG}>", text)


def session_text(session: SessionLabel) -> str:
    if session.active:
        return f"{session.number} (current)"
    if session.ended_at is not None:
        return f"{session.number} (ended {session.ended_at.date().isoformat()})"
    return str(session.number)


def _attrs(excerpt: Excerpt, session: SessionLabel | None = None) -> str:
    attrs = [f'id="{excerpt.message_id}"', f'role="{_attr(excerpt.role)}"']
    if excerpt.author_name:
        attrs.append(f'author="{_attr(excerpt.author_name)}"')
    if excerpt.created_at is not None:
        attrs.append(f'date="{excerpt.created_at.isoformat(timespec="minutes")}"')
    if session is not None:
        attrs.append(f'session="{_attr(session_text(session))}"')
    if excerpt.partial and excerpt.total_chars is not None:
        end = excerpt.offset + len(excerpt.text)
        attrs.append(f'chars="{excerpt.offset}-{end} of {excerpt.total_chars}"')
    return " ".join(attrs)


def format_excerpt(excerpt: Excerpt, session: SessionLabel | None = None) -> str:
    """One message as `<recalled ...>text</recalled>`, its text unable to close the tag."""
    return f"<{TAG} {_attrs(excerpt, session)}>\n{_body(excerpt.text)}\n</{TAG}>"


def _context_line(label: str, excerpt: Excerpt) -> str:
    who = excerpt.author_name or excerpt.role
    when = excerpt.created_at.isoformat(timespec="minutes") if excerpt.created_at else "?"
    return f"[{label} #{excerpt.message_id}, {_attr(who)}, {when}] {_body(excerpt.text)}"


def format_hit(hit: RecallHit) -> str:
    """A hit with the question it answers before it, or the answer to it after it."""
    lines = []
    if hit.before is not None:
        lines.append(_context_line("in reply to", hit.before))
    lines.append(_body(hit.main.text))
    if hit.after is not None:
        lines.append(_context_line("answered by", hit.after))
    return f"<{TAG} {_attrs(hit.main, hit.session)}>\n" + "\n".join(lines) + f"\n</{TAG}>"


def format_page(page: OriginalsPage, *, asked_id: int | None) -> str:
    head = (
        f"Summary #{page.summary_id} (session {session_text(page.session)}) replaced {page.total} "
        f"stored message(s) in {page.parts} compaction(s). Page {page.page} of {page.pages}, oldest first:"
    )
    if not page.messages:
        return head + "\n(no messages on this page)"
    body = "\n\n".join(format_excerpt(m) for m in page.messages)
    notes = []
    if any(m.partial for m in page.messages):
        notes.append("Shortened messages: read them whole with recall message_id=<id>.")
    if page.page < page.pages:
        which = f"message_id={asked_id}, " if asked_id is not None else ""
        notes.append(f"Next page: recall with originals=true, {which}page={page.page + 1}.")
    return "\n\n".join([head, body, *notes])
