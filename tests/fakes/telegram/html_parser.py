"""A strict parser for Telegram's HTML parse mode, used by the fake Bot API to reject what Telegram rejects.

Rules (https://core.telegram.org/bots/api#html-style): only the tags below, properly nested and closed;
`<`, `>`-as-tag-start and `&` must be written as entities (`&lt;` `&gt;` `&amp;` `&quot;` or numeric);
`pre`/`code` hold no other tags except one `code` directly inside `pre`. `parse_html` returns the text a
user would see (entities decoded, tags removed) or raises `HtmlParseError` with Telegram's wording.
"""

from __future__ import annotations

import re

_ALLOWED = {
    "b": set(),
    "strong": set(),
    "i": set(),
    "em": set(),
    "u": set(),
    "ins": set(),
    "s": set(),
    "strike": set(),
    "del": set(),
    "span": {"class"},
    "tg-spoiler": set(),
    "a": {"href"},
    "code": {"class"},
    "pre": set(),
    "blockquote": {"expandable"},
    "tg-emoji": {"emoji-id"},
}
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_ENTITY_RE = re.compile(r"&(?:(lt|gt|amp|quot)|#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6}));")
_TAG_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_ATTR_RE = re.compile(r"""\s*([A-Za-z][A-Za-z0-9_-]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
_URL_RE = re.compile(r"(?:https?|tg|ftp)://\S+|mailto:\S+", re.IGNORECASE)


class HtmlParseError(ValueError):
    """The text is not valid Telegram HTML; `str()` is the description after "can't parse entities: "."""


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def parse_html(source: str) -> str:
    """The visible text of `source`, or `HtmlParseError` when Telegram would refuse it."""
    out: list[str] = []
    stack: list[str] = []
    i = 0
    n = len(source)
    while i < n:
        ch = source[i]
        if ch == "&":
            text, i = _entity(source, i)
            out.append(text)
        elif ch == "<":
            i = _end_tag(source, i, stack) if source.startswith("</", i) else _start_tag(source, i, stack)
        else:
            out.append(ch)
            i += 1
    if stack:
        raise HtmlParseError(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return "".join(out)


def _offset(source: str, i: int) -> int:
    return len(source[:i].encode("utf-8", "surrogatepass"))


def _entity(source: str, i: int) -> tuple[str, int]:
    m = _ENTITY_RE.match(source, i)
    if not m:
        raise HtmlParseError(f"Character entity expected at byte offset {_offset(source, i)}")
    named, dec, hexa = m.groups()
    if named:
        return _NAMED[named], m.end()
    code = int(dec) if dec else int(hexa, 16)
    if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        raise HtmlParseError(f"Invalid character entity at byte offset {_offset(source, i)}")
    return chr(code), m.end()


def _decode_attr(value: str, source: str, at: int) -> str:
    if "<" in value:
        raise HtmlParseError(f"Unexpected character in attribute value at byte offset {_offset(source, at)}")
    out: list[str] = []
    j = 0
    while j < len(value):
        if value[j] == "&":
            text, j = _entity(value, j)
            out.append(text)
        else:
            out.append(value[j])
            j += 1
    return "".join(out)


def _start_tag(source: str, i: int, stack: list[str]) -> int:
    name_match = _TAG_NAME_RE.match(source, i + 1)
    if not name_match:
        raise HtmlParseError(f'Unsupported start tag "" at byte offset {_offset(source, i)}')
    name = name_match.group(0).lower()
    if name not in _ALLOWED:
        raise HtmlParseError(f'Unsupported start tag "{name}" at byte offset {_offset(source, i)}')
    j = name_match.end()
    attrs: dict[str, str] = {}
    while True:
        if j >= len(source):
            raise HtmlParseError(f"Unclosed start tag at byte offset {_offset(source, i)}")
        if source[j] == ">":
            j += 1
            break
        if source[j] == "/" and source.startswith("/>", j):
            raise HtmlParseError(f'Unsupported self-closing tag "{name}" at byte offset {_offset(source, i)}')
        m = _ATTR_RE.match(source, j)
        if not m or m.end() == j:
            raise HtmlParseError(f"Unclosed start tag at byte offset {_offset(source, i)}")
        raw = next((g for g in m.groups()[1:] if g is not None), "")
        attrs[m.group(1).lower()] = _decode_attr(raw, source, j)
        j = m.end()
    _check_tag(name, attrs, stack, source, i)
    stack.append(name)
    return j


def _check_tag(name: str, attrs: dict[str, str], stack: list[str], source: str, i: int) -> None:
    where = f"at byte offset {_offset(source, i)}"
    if stack and stack[-1] in ("code", "pre") and not (stack[-1] == "pre" and name == "code"):
        raise HtmlParseError(f'Unsupported tag "{name}" inside "{stack[-1]}" {where}')
    if name == "code" and "class" in attrs and not (stack and stack[-1] == "pre"):
        attrs.pop("class")  # Telegram ignores a language outside pre
    if name == "code" and "class" in attrs and not attrs["class"].startswith("language-"):
        raise HtmlParseError(f'Unsupported class "{attrs["class"]}" of tag "code" {where}')
    if name == "span" and attrs.get("class") != "tg-spoiler":
        raise HtmlParseError(f'Tag "span" must have class "tg-spoiler" {where}')
    if name == "a":
        if "a" in stack:
            raise HtmlParseError(f'Nested tag "a" {where}')
        href = attrs.get("href", "")
        if href and not _URL_RE.fullmatch(href):
            raise HtmlParseError(f'Wrong URL "{href}" in tag "a" {where}')
    if name == "tg-emoji" and not attrs.get("emoji-id", "").isdigit():
        raise HtmlParseError(f'Tag "tg-emoji" must have an "emoji-id" {where}')
    unknown = set(attrs) - _ALLOWED[name]
    if unknown:
        raise HtmlParseError(f'Unsupported attribute "{sorted(unknown)[0]}" in tag "{name}" {where}')


def _end_tag(source: str, i: int, stack: list[str]) -> int:
    close = source.find(">", i)
    if close < 0:
        raise HtmlParseError(f"Unclosed end tag at byte offset {_offset(source, i)}")
    name = source[i + 2 : close].strip().lower()
    if not stack:
        raise HtmlParseError(f'Unexpected end tag "{name}" at byte offset {_offset(source, i)}')
    if stack[-1] != name:
        where = _offset(source, i)
        raise HtmlParseError(
            f'Unmatched end tag at byte offset {where}, expected "</{stack[-1]}>", found "</{name}>"'
        )
    stack.pop()
    return close + 1
