"""The command registry: one list feeding Telegram's menu, Discord's slash commands and `/help`.

Handlers get a `CommandContext` and return the reply text. Admin commands are refused for everyone
else before the handler runs (fail closed), and refusals change nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass

from gateway.platforms.base import CommandSpec, IncomingMessage

MAX_ARGS_CHARS = 500

HELP = CommandSpec("help", "What this bot can do and which commands you may use", admin_only=False)
NEW = CommandSpec("new", "Start a fresh conversation (the old one is kept)", admin_only=False)
STATS = CommandSpec(
    "stats",
    "Context, cache and cost statistics for this chat",
    admin_only=True,
    args_hint="[detail | all]",
)
COMPACT = CommandSpec(
    "compact",
    "Compact this chat's context now (optional focus), or undo the last one",
    admin_only=True,
    args_hint="[focus | undo]",
)
PIN = CommandSpec(
    "pin",
    "Keep a fact word for word in every request (admins; in a private chat, you)",
    admin_only=False,
    args_hint="<fact>",
)
PINS = CommandSpec("pins", "List this chat's pinned facts", admin_only=False)
UNPIN = CommandSpec("unpin", "Remove a pinned fact by its number in /pins", admin_only=False, args_hint="N")
REMINDERS = CommandSpec(
    "reminders",
    "List this chat's pending reminders, or cancel one by its id",
    admin_only=False,
    args_hint="[cancel <id>]",
)
TIMEZONE = CommandSpec(
    "timezone", "Set this chat's time zone for reminders (IANA name)", admin_only=False, args_hint="<zone>"
)
COMMANDS: tuple[CommandSpec, ...] = (HELP, NEW, STATS, COMPACT, PIN, PINS, UNPIN, REMINDERS, TIMEZONE)
BY_NAME = {c.name: c for c in COMMANDS}


def offered(names: Collection[str]) -> tuple[CommandSpec, ...]:
    """The menu a deployment shows: the commands it has a handler for (reminders off: no /reminders)."""
    return tuple(spec for spec in COMMANDS if spec.name in names)


@dataclass(frozen=True, slots=True)
class CommandContext:
    message: IncomingMessage
    chat_pk: int
    is_admin: bool
    args: str


Handler = Callable[[CommandContext], Awaitable[str]]


CONSOLE = "console"
"""The terminal chat's platform: one private chat whose local user is an admin."""
CONSOLE_FILE = (
    "/file PATH [question] — Send a local file (image, PDF, text or audio) with an optional question"
)
"""Read by the console itself, not a command of the menu; its help names it."""


def help_text(*, is_admin: bool, platform: str = "", menu: Sequence[CommandSpec] = COMMANDS) -> str:
    """What `/help` says: the chat assistant in a private chat or group, or the terminal chat."""
    if platform == CONSOLE:
        intro = "I'm a chat assistant in your terminal: I answer every line you type. Ctrl-D quits."
    else:
        intro = (
            "I'm a chat assistant. In private chats I answer every message; in groups, mention me or "
            "reply to me."
        )
    lines = [intro, "", "Commands:"]
    for spec in menu:
        if spec.admin_only and not is_admin:
            continue
        hint = f" {spec.args_hint}" if spec.args_hint else ""
        lines.append(f"/{spec.name}{hint} — {spec.description}")
    if platform == CONSOLE:
        lines.append(CONSOLE_FILE)
    return "\n".join(lines)


def refusal(spec: CommandSpec) -> str:
    return f"/{spec.name} is for admins of this bot only. Nothing was changed."


def unknown(name: str) -> str:
    shown = name[:32] + ("…" if len(name) > 32 else "")
    return f"Unknown command /{shown}. Try /help."


def normalise_args(args: str) -> tuple[str, str | None]:
    """Trimmed args and, when they are unusable, a clear reason."""
    args = " ".join(args.replace("\x00", " ").split())
    if len(args) > MAX_ARGS_CHARS:
        return args[
            :MAX_ARGS_CHARS
        ], f"the argument is too long ({len(args)} characters; at most {MAX_ARGS_CHARS})"
    return args, None
