"""The model's markdown as terminal text (pure): readable without a markdown viewer.

Code fences become an indented block (the fence lines go), headings and `**bold**` become bold,
`*italic*` italic, inline code is coloured, bullets become `•`, numbered items keep their number,
`> quotes` get a bar, table rows lose their outer pipes (the `|---|` line becomes a rule), links show
their address after the text, and prose is wrapped to the terminal's width under a hanging indent (a
list item's or quote's continuation lines under its text; colour codes take no width). Without colour
(a pipe, a file) the markers are dropped but nothing is wrapped, so the text stays what the model wrote.
Each line renders alone, so a reply can be rendered while it streams (`stream_render`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BOLD, DIM, ITALIC, CYAN, RESET = "\x1b[1m", "\x1b[2m", "\x1b[3m", "\x1b[36m", "\x1b[0m"
PREFIX = "bot> "
INDENT = " " * len(PREFIX)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d{1,3}[.)])\s+(.*)$")
_QUOTE = re.compile(r"^\s*>\s?(.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![*\w])")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
"""Only `**bold**`: `__x__` is far more often a Python name than emphasis."""
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")


@dataclass(frozen=True, slots=True)
class Style:
    color: bool
    width: int | None
    """Wrap prose to this many columns; None leaves lines as they are."""
    prefix: str = PREFIX
    """What starts a reply (`bot> `; `demo> ` in the demo); its later lines are indented as far."""

    @property
    def indent(self) -> str:
        return " " * len(self.prefix)


def render_reply(text: str, style: Style) -> str:
    """The reply as terminal lines: `bot> ` before the first, the rest indented under it."""
    lines = _render_lines(text, style)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return style.prefix.rstrip()
    return "\n".join([style.prefix + lines[0], *(style.indent + line if line else "" for line in lines[1:])])


def _render_lines(text: str, style: Style) -> list[str]:
    out: list[str] = []
    in_code = False
    for raw in text.splitlines():
        rows, in_code = line_rows(raw, style, in_code=in_code)
        out.extend(rows)
    return out


def line_rows(raw: str, style: Style, *, in_code: bool) -> tuple[list[str], bool]:
    """One source line as terminal rows, and whether a code block is open after it (a fence line
    opens or closes one and shows nothing)."""
    if _FENCE.match(raw):
        return [], not in_code
    if in_code:
        return [_paint("  " + raw, DIM, style)], True
    return _prose_line(raw, style), False


def opens_fence(partial: str) -> bool:
    """Whether an unfinished line may still turn out to be a code fence."""
    return partial.lstrip()[:1] in ("`", "~")


def visible_len(text: str) -> int:
    """Columns `text` takes on a terminal: colour codes take none."""
    return len(_ANSI.sub("", text))


def _prose_line(raw: str, style: Style) -> list[str]:
    heading = _HEADING.match(raw)
    if heading:
        title = _inline(heading.group(2), style, bold=False)
        return [_paint(row, BOLD, style) for row in _wrap(title, style)]
    if _TABLE_RULE.match(raw) and "-" in raw and "|" in raw:
        return [_paint("─" * min(40, style.width or 40), DIM, style)]
    if raw.strip().startswith("|") and raw.strip().endswith("|") and len(raw.strip()) > 1:
        cells = [_inline(cell.strip(), style) for cell in raw.strip()[1:-1].split("|")]
        return _wrap(" │ ".join(cells), style)
    quote = _QUOTE.match(raw)
    if quote:
        bar = _paint("│", DIM, style) + " "
        return _wrap(_inline(quote.group(1), style), style, lead=bar, rest=bar)
    lead, body = "", raw
    bullet, numbered = _BULLET.match(raw), _NUMBERED.match(raw)
    if bullet:
        lead, body = bullet.group(1) + "• ", bullet.group(2)
    elif numbered:
        lead, body = f"{numbered.group(1)}{numbered.group(2)} ", numbered.group(3)
    return _wrap(_inline(body, style), style, lead=lead)


def _wrap(rendered: str, style: Style, *, lead: str = "", rest: str | None = None) -> list[str]:
    """Prose rows under the reply's indent; a word is never broken (a longer one gets its own row).
    Later rows start with `rest` (default: spaces as wide as `lead`)."""
    if style.width is None or not rendered.strip():
        return [lead + rendered]
    width = max(20, style.width - len(style.indent))
    follow = " " * visible_len(lead) if rest is None else rest
    rows: list[str] = []
    row, used, empty = lead, visible_len(lead), True
    for word in rendered.split():
        size = visible_len(word)
        if not empty and used + 1 + size > width:
            rows.append(row)
            row, used, empty = follow, visible_len(follow), True
        row, used = (row + word, used + size) if empty else (f"{row} {word}", used + 1 + size)
        empty = False
    rows.append(row)
    return rows


def _inline(text: str, style: Style, *, bold: bool = True) -> str:
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
    if style.color:
        text = _CODE.sub(lambda m: f"{CYAN}{m.group(1)}{RESET}", text)
    if bold:
        text = _BOLD.sub(lambda m: _paint(m.group(1), BOLD, style), text)
    return _ITALIC.sub(lambda m: _paint(m.group(1), ITALIC, style), text)


def _paint(text: str, code: str, style: Style) -> str:
    return f"{code}{text}{RESET}" if style.color and text else text
