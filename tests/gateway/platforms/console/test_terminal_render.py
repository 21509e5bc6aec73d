"""Replies rendered for the terminal: markers gone, code indented, prose wrapped only on a TTY."""

from __future__ import annotations

from gateway.platforms.console.terminal_render import (
    BOLD,
    CYAN,
    ITALIC,
    RESET,
    Style,
    render_reply,
    visible_len,
)

PLAIN = Style(color=False, width=None)

REPLY = """# Deploy plan
Run **this** first, see [the docs](https://example.com/deploy):
- stop the `worker`
- migrate
```sh
make migrate
```
Done."""


def test_plain_output_drops_markers_and_keeps_every_line() -> None:
    assert render_reply(REPLY, PLAIN).splitlines() == [
        "bot> Deploy plan",
        "     Run this first, see the docs (https://example.com/deploy):",
        "     • stop the `worker`",
        "     • migrate",
        "       make migrate",
        "     Done.",
    ]


def test_colour_marks_headings_bold_and_inline_code() -> None:
    text = render_reply(REPLY, Style(color=True, width=None))
    assert f"bot> {BOLD}Deploy plan{RESET}" in text
    assert f"Run {BOLD}this{RESET} first" in text
    assert f"{CYAN}worker{RESET}" in text


def test_prose_wraps_under_a_hanging_indent_but_code_does_not() -> None:
    long_line = "word " * 30
    code = "x" * 70
    lines = render_reply(f"{long_line}\n```\n{code}\n```", Style(color=False, width=40)).splitlines()
    assert all(len(line) <= 40 for line in lines[:-1])
    assert lines[0].startswith("bot> word")
    assert all(line.startswith("     word") for line in lines[1:-1])
    assert lines[-1] == "       " + code


def test_underscores_in_names_are_left_alone() -> None:
    assert (
        render_reply("set max_file_mb and __init__ stays", PLAIN) == "bot> set max_file_mb and __init__ stays"
    )


def test_an_empty_reply_is_just_the_prompt() -> None:
    assert render_reply("", PLAIN) == "bot>"


def test_colour_codes_take_no_width_when_wrapping() -> None:
    text = " ".join(["**bold**", "`code`"] * 12)
    style = Style(color=True, width=50)
    rows = render_reply(text, style).splitlines()
    assert all(visible_len(row) <= 50 for row in rows)
    assert max(visible_len(row) for row in rows) >= 40  # filled to the edge, not wrapped early


def test_a_numbered_item_continues_under_its_text() -> None:
    rows = render_reply("1. " + "word " * 20, Style(color=False, width=40)).splitlines()
    assert rows[0].startswith("bot> 1. word")
    assert all(row.startswith("        word") for row in rows[1:])


def test_italic_quotes_and_tables_are_rendered() -> None:
    reply = "an *important* note, not 2 * 3 * 4\n> quoted line\n| a | b |\n|---|---|\n| 1 | 2 |"
    assert render_reply(reply, PLAIN).splitlines() == [
        "bot> an important note, not 2 * 3 * 4",
        "     │ quoted line",
        "     a │ b",
        "     " + "─" * 40,
        "     1 │ 2",
    ]
    assert f"{ITALIC}important{RESET}" in render_reply(reply, Style(color=True, width=None))


def test_a_quote_continues_with_its_bar() -> None:
    rows = render_reply("> " + "word " * 20, Style(color=False, width=40)).splitlines()
    assert all(row.startswith(("bot> │ word", "     │ word")) for row in rows)


def test_the_demo_marks_every_reply() -> None:
    demo = Style(color=False, width=30, prefix="demo> ")
    rows = render_reply("word " * 12, demo).splitlines()
    assert rows[0].startswith("demo> word")
    assert all(row.startswith("      word") for row in rows[1:])
