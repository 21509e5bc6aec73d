"""Logging for the gateway process: one format, quiet HTTP clients, and secrets redacted everywhere.

HTTP client libraries log request URLs, and the Telegram Bot API puts the bot token in the URL path,
so a filter on the root handlers replaces every configured secret (and anything shaped like a bot
token) before a record is written.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable
from typing import TextIO

from gateway.config import Settings

REDACTED = "<redacted>"
# No \b before the id: in a Bot API URL the token follows "bot" directly (".../bot123:ABC.../getMe").
_TELEGRAM_TOKEN = re.compile(r"(?<!\d)\d{5,}:[A-Za-z0-9_-]{30,}(?![A-Za-z0-9_-])")
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://[^:/@\s]+:)[^@\s]+@", re.IGNORECASE)
NOISY = (
    "httpx",
    "httpx2",
    "httpcore",
    "httpcore2",
    "telegram.ext",
    "discord.gateway",
    "discord.http",
    "aiohttp.access",
    "alembic.runtime.plugins",
    "apscheduler.executors.default",
    "tornado.access",
)


class RedactingFilter(logging.Filter):
    """Replace secrets in the rendered message (args included) of every record."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = sorted({s for s in secrets if s and len(s) >= 6}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        text = _TELEGRAM_TOKEN.sub(REDACTED, text)
        return _URL_PASSWORD.sub(lambda m: m.group("scheme") + REDACTED + "@", text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self.redact(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def secrets_of(settings: Settings) -> list[str]:
    values = [
        settings.anthropic_api_key,
        settings.telegram_bot_token,
        settings.discord_bot_token,
        settings.telegram_webhook_secret,
    ]
    found = [v.get_secret_value() for v in values if v is not None]
    match = _URL_PASSWORD.search(settings.database_url)
    if match:
        found.append(settings.database_url[match.end("scheme") : match.end() - 1])
    return found


FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to `sys.stderr` as it is when a record is emitted, not as it was when logging was set up:
    a stream swapped in meanwhile (a terminal UI, a test's capture) and closed again never receives a
    record after it is gone."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr  # under the handler's lock, as `handle` holds it
        super().emit(record)

    def flush(self) -> None:
        self.stream = sys.stderr
        super().flush()


def _to_stderr(level: int | str) -> None:
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)


def setup_logging(settings: Settings, *, report: bool = False) -> None:
    """Logs to stderr at `log_level`; for a command whose output is a report (`doctor`), only warnings
    and errors, so log lines do not interleave with it."""
    level = logging.WARNING if report else settings.log_level
    _to_stderr(level)
    _quiet_and_redact(settings)


def setup_console_logging(settings: Settings) -> str:
    """Logging for the terminal chat, which must stay readable: everything goes to `console.log_file`
    (appended), or only warnings and errors reach stderr when it is off. Returns the line to show once."""
    log_file = settings.console.log_file
    if log_file is None:
        _to_stderr(logging.WARNING)
        _quiet_and_redact(settings)
        return "(logs: warnings and errors only, shown here; set CONSOLE__LOG_FILE to keep them all)"
    path = log_file.expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    logging.basicConfig(level=settings.log_level, handlers=[handler], force=True)
    _quiet_and_redact(settings)
    return f"(logs: {path})"


def _quiet_and_redact(settings: Settings) -> None:
    redactor = RedactingFilter(secrets_of(settings))
    for handler in logging.getLogger().handlers:
        handler.addFilter(redactor)
    if settings.log_level != "DEBUG":
        for name in NOISY:
            logging.getLogger(name).setLevel(logging.WARNING)
