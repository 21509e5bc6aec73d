"""Model markdown -> Telegram HTML, valid by construction.

Telegram rejects a whole message when its HTML does not parse, so every tag emitted here is opened and
closed by the same function and every piece of source text goes through `html.escape`. Markdown that
does not match a rule (an unbalanced `**`, a lone backtick) is kept as literal, escaped text.
Supported: **bold**/__bold__, *italic*/_italic_, ~~strike~~, `code`, ``` fenced blocks (with a
language class), [text](http-url), > quotes and # headings (rendered bold). Lists stay plain text.
"""

from __future__ import annotations

import html
import re

FENCE = "```"
_LANG_RE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_QUOTE_RE = re.compile(r"^ {0,3}> ?(.*)$")
_LINK_RE = re.compile(r"\[([^\[\]\n]+)\]\(((?:https?://|tg://|mailto:)[^\s()<>\"]+)\)")
_PAIR_TAGS = {"**": "b", "__": "b", "~~": "s", "*": "i", "_": "i"}


def escape(text: str) -> str:
    """Escape text for Telegram HTML (only <, >, & and quotes are special)."""
    return html.escape(text, quote=True)


def markdown_to_telegram_html(text: str) -> str:
    """Render `text` as Telegram HTML; the result always parses under Telegram's HTML rules."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(FENCE):
            block, i = _fenced_block(lines, i)
            out.append(block)
            continue
        if _QUOTE_RE.match(line):
            quoted: list[str] = []
            while (
                i < len(lines)
                and (m := _QUOTE_RE.match(lines[i]))
                and not lines[i].lstrip().startswith(FENCE)
            ):
                quoted.append(m.group(1))
                i += 1
            out.append("<blockquote>" + "\n".join(render_inline(q) for q in quoted) + "</blockquote>")
            continue
        heading = _HEADING_RE.match(line)
        if heading and heading.group(1).strip():
            out.append("<b>" + render_inline(heading.group(1)) + "</b>")
        else:
            out.append(render_inline(line))
        i += 1
    return "\n".join(out)


def _fenced_block(lines: list[str], start: int) -> tuple[str, int]:
    """A ``` block from `lines[start]` to its closing fence (or the end of the text when unclosed)."""
    lang = lines[start].strip()[len(FENCE) :].strip()
    body: list[str] = []
    i = start + 1
    while i < len(lines) and not lines[i].lstrip().startswith(FENCE):
        body.append(lines[i])
        i += 1
    code = escape("\n".join(body))
    if _LANG_RE.fullmatch(lang):
        rendered = f'<pre><code class="language-{escape(lang)}">{code}</code></pre>'
    else:
        rendered = f"<pre>{code}</pre>"
    return rendered, i + 1


def render_inline(text: str, *, links: bool = True) -> str:
    """Render one line's inline markdown; anything that does not form a pair stays literal."""
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "`":
            end, html_code = _code_span(text, i)
            if end > i:
                out.append(html_code)
                i = end
                continue
            # A run of backticks without a closing run is literal text.
            run = _run_length(text, i, "`")
            out.append(text[i : i + run])
            i += run
            continue
        if ch == "[" and links:
            m = _LINK_RE.match(text, i)
            if m:
                label = render_inline(m.group(1), links=False)
                out.append(f'<a href="{escape(m.group(2))}">{label}</a>')
                i = m.end()
                continue
        if ch in "*_~":
            rendered, end = _emphasis(text, i, links=links)
            if end > i:
                out.append(rendered)
                i = end
                continue
            if ch == "~" or text.startswith(ch * 2, i):
                run = _run_length(text, i, ch)
                out.append(escape(text[i : i + run]))
                i += run
                continue
        out.append(escape(ch))
        i += 1
    return "".join(out)


def _run_length(text: str, i: int, ch: str) -> int:
    j = i
    while j < len(text) and text[j] == ch:
        j += 1
    return j - i


def _code_span(text: str, i: int) -> tuple[int, str]:
    """A backtick code span starting at `i`: (end index, html), or (i, "") when it is not closed."""
    run = _run_length(text, i, "`")
    fence = "`" * run
    j = i + run
    while True:
        k = text.find(fence, j)
        if k < 0:
            return i, ""
        if _run_length(text, k, "`") == run:
            body = text[i + run : k]
            if not body.strip():
                return i, ""
            return k + run, "<code>" + escape(body) + "</code>"
        j = k + _run_length(text, k, "`")


def _emphasis(text: str, i: int, *, links: bool) -> tuple[str, int]:
    """A delimited span (**, __, ~~, *, _) starting at `i`: (html, end) or ("", i) when unmatched."""
    for delim in ("**", "__", "~~", "*", "_"):
        if not text.startswith(delim, i):
            continue
        if len(delim) == 1 and text.startswith(delim * 2, i):
            continue
        start = i + len(delim)
        if start >= len(text) or text[start].isspace():
            continue
        if delim[0] == "_" and i > 0 and text[i - 1].isalnum():
            continue  # snake_case is not emphasis
        close = _find_closer(text, start, delim)
        if close < 0:
            continue
        tag = _PAIR_TAGS[delim]
        inner = render_inline(text[start:close], links=links)
        return f"<{tag}>{inner}</{tag}>", close + len(delim)
    return "", i


def _find_closer(text: str, start: int, delim: str) -> int:
    j = start
    while True:
        k = text.find(delim, j)
        if k < 0:
            return -1
        after = k + len(delim)
        ok = not text[k - 1].isspace() and k > start
        if len(delim) == 1 and after < len(text) and text[after] == delim:
            ok = False  # part of a longer run such as ** inside *...*
        if delim[0] == "_" and after < len(text) and text[after].isalnum():
            ok = False
        if ok:
            return k
        j = k + 1
