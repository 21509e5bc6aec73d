"""A reply rendered while it streams (pure): each terminal row is printed once, when it can no longer change.

A source line is rendered when its newline arrives (code fences, headings and bullets are known by
then). A long paragraph does not wait for its end: wrapping is greedy, so once whole words push a row
up it is final and is printed; a row with unclosed markup (`**`, a backtick, a link) waits. Blank lines
are held back until more text follows, so a reply never ends in blank rows. The result is the same
rows `render_reply` gives for the whole text.
"""

from __future__ import annotations

from gateway.platforms.console.terminal_render import Style, line_rows, opens_fence


class ReplyStream:
    """Feed it the reply so far (`feed`), then the final text (`finish`); each returns rows to print."""

    def __init__(self, style: Style) -> None:
        self.style = style
        self.consumed = ""
        """The complete source lines already rendered."""
        self._in_code = False
        self._rows_out = 0
        """Rows of the unfinished line already printed."""
        self._blank = 0
        self._started = False

    @property
    def started(self) -> bool:
        """Whether a row (the one with the `bot> ` prefix) has been printed."""
        return self._started

    def feed(self, text: str) -> list[str]:
        if not text.startswith(self.consumed):
            return []  # the reply changed under what was printed: `finish` sorts it out
        out: list[str] = []
        rest = text[len(self.consumed) :]
        while "\n" in rest:
            line, _, rest = rest.partition("\n")
            rows, self._in_code = line_rows(line, self.style, in_code=self._in_code)
            out.extend(self._emit(rows[self._rows_out :]))
            self._rows_out = 0
            self.consumed += line + "\n"
        out.extend(self._partial(rest))
        return out

    def finish(self, text: str) -> list[str]:
        """The rows still to print once `text`, the whole reply, is final."""
        body = text.rstrip()
        if not (body + "\n").startswith(self.consumed) and not self.consumed.startswith(body):
            # What was printed is not the start of the final text: print the final text anew.
            fresh = ReplyStream(self.style)
            return ([""] if self._started else []) + fresh.finish(text)
        out = self.feed(body + "\n") if len(body) + 1 > len(self.consumed) else []
        if not self._started:
            out.append(self.style.prefix.rstrip())
            self._started = True
        return out

    def _partial(self, rest: str) -> list[str]:
        """Rows of an unfinished prose line that later words cannot change."""
        if self._in_code or self.style.width is None or opens_fence(rest):
            return []
        cut = max(rest.rfind(" "), rest.rfind("\t"))
        words = rest[:cut] if cut > 0 else ""
        if not words.strip() or not _balanced(words):
            return []
        rows, _ = line_rows(words, self.style, in_code=False)
        final = rows[:-1]  # the last row may still take more words
        out = self._emit(final[self._rows_out :])
        self._rows_out = max(self._rows_out, len(final))
        return out

    def _emit(self, rows: list[str]) -> list[str]:
        out: list[str] = []
        for row in rows:
            if not row.strip():
                if self._started:
                    self._blank += 1
                continue
            out.extend([""] * self._blank)
            self._blank = 0
            out.append((self.style.indent if self._started else self.style.prefix) + row)
            self._started = True
        return out


def _balanced(text: str) -> bool:
    """No markup left open that would change the row once closed."""
    return text.count("*") % 2 == 0 and text.count("`") % 2 == 0 and text.rfind("[") <= text.rfind(")")
