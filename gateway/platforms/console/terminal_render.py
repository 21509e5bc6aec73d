"""The model's markdown as terminal text (pure): readable without a markdown viewer.

Code fences become an indented block (the fence lines go), headings and `**bold**` become bold, inline
code is coloured, bullets become `•`, links show their address after the text, and prose is wrapped to
the terminal's width under a hanging indent. Without colour (a pipe, a file) the markers are dropped
but nothing is wrapped, so the text stays what the model wrote.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

BOLD, DIM, CYAN, RESET = "\x1b[1m", "\x1b[2m", "\x1b[36m", "\x1b[0m"
PREFIX = "bot> "
INDENT = " " * len(PREFIX)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
"""Only `**bold**`: `__x__` is far more often a Python name than emphasis."""
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")


@dataclass(frozen=True, slots=True)
class Style:
    color: bool
    width: int | None
    """Wrap prose to this many columns; None leaves lines as they are."""


def render_reply(text: str, style: Style) -> str:
    """The reply as terminal lines: `bot> ` before the first, the rest indented under it."""
    lines = _render_lines(text, style)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return PREFIX.rstrip()
    return "\n".join([PREFIX + lines[0], *(INDENT + line if line else "" for line in lines[1:])])


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


def _prose_line(raw: str, style: Style) -> list[str]:
    heading = _HEADING.match(raw)
    if heading:
        title = _inline(heading.group(2), style, bold=False)
        return [_paint(row, BOLD, style) for row in _wrap(title, style)]
    bullet = _BULLET.match(raw)
    lead, body = (bullet.group(1) + "• ", bullet.group(2)) if bullet else ("", raw)
    return _wrap(_inline(body, style), style, lead=lead)


def _wrap(rendered: str, style: Style, *, lead: str = "") -> list[str]:
    """Prose rows under the reply's indent; a word is never broken (a longer one gets its own row)."""
    if style.width is None or not rendered.strip():
        return [lead + rendered]
    width = max(20, style.width - len(INDENT))
    return textwrap.wrap(
        rendered,
        width=width,
        initial_indent=lead,
        subsequent_indent=" " * len(lead),
        break_long_words=False,
        break_on_hyphens=False,
    ) or [""]


def _inline(text: str, style: Style, *, bold: bool = True) -> str:
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
    if style.color:
        text = _CODE.sub(lambda m: f"{CYAN}{m.group(1)}{RESET}", text)
    if bold:
        text = _BOLD.sub(lambda m: _paint(m.group(1), BOLD, style), text)
    return text


def _paint(text: str, code: str, style: Style) -> str:
    return f"{code}{text}{RESET}" if style.color and text else text
