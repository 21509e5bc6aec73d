"""Replies rendered for the terminal: markers gone, code indented, prose wrapped only on a TTY."""

from __future__ import annotations

from gateway.platforms.console.terminal_render import BOLD, CYAN, RESET, Style, render_reply

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
