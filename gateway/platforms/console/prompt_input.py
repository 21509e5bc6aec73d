"""The terminal chat's input line (prompt_toolkit): a `you> ` prompt with line editing and history, and
a status line above it while the bot works ("Working… 12 s").

While the prompt is up, everything written to `sys.stdout` is printed above it (`patch_stdout`), so a
reply arriving while the user types never garbles the line being typed. A line entered stays in the
transcript as `you> text`, without the status line; Ctrl-C or Ctrl-D (on an empty line) erase the
prompt as they quit, so a reply still being printed is not cut by a stray `you> `.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

from prompt_toolkit import PromptSession
from prompt_toolkit.application.current import get_app
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout

PROMPT = "you> "
SHOW_SECONDS_AFTER_S = 2.0
REFRESH_S = 0.5


class PromptInput:
    """Reads lines at the prompt; `activity` sets (or clears, with None) the status line above it."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._session: PromptSession[str] = PromptSession(
            history=InMemoryHistory(), key_bindings=_quit_keys()
        )
        self._clock = clock
        self._activity: str | None = None
        self._since = 0.0

    def activity(self, text: str | None) -> None:
        if text is not None and self._activity is None:
            self._since = self._clock()
        self._activity = text
        app = self._session.app
        if app.is_running:
            app.invalidate()

    def message(self) -> FormattedText:
        """The prompt, with the status line above it while something is under way."""
        if self._activity is None or self._session.app.is_done:
            return FormattedText([("", PROMPT)])  # the line entered stays in the transcript without it
        elapsed = self._clock() - self._since
        seconds = f" {elapsed:.0f} s" if elapsed >= SHOW_SECONDS_AFTER_S else ""
        return FormattedText([("fg:ansicyan", f"{self._activity}{seconds}"), ("", "\n" + PROMPT)])

    async def lines(self) -> AsyncIterator[str]:
        """Each line entered; ends on Ctrl-D or Ctrl-C."""
        with patch_stdout(raw=True):
            while True:
                try:
                    yield await self._session.prompt_async(self.message, refresh_interval=REFRESH_S)
                except (EOFError, KeyboardInterrupt):
                    return


def _quit_keys() -> KeyBindings:
    """Ctrl-C, and Ctrl-D on an empty line, quit and take the prompt off the screen."""
    keys = KeyBindings()
    empty = Condition(lambda: not get_app().current_buffer.text)

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        event.app.erase_when_done = True
        event.app.exit(exception=KeyboardInterrupt())

    @keys.add("c-d", filter=empty)
    def _end(event: KeyPressEvent) -> None:
        event.app.erase_when_done = True
        event.app.exit(exception=EOFError())

    return keys
