"""Secrets never reach the log: bot tokens in URLs, the API key in messages and in exception text."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from gateway.app.logsetup import REDACTED, RedactingFilter

TOKEN = "123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQr"
API_KEY = "sk-ant-api03-secretvalue"


def render(record: logging.LogRecord) -> str:
    return logging.Formatter("%(message)s").format(record)


def test_telegram_token_in_a_url_is_redacted_even_when_not_configured() -> None:
    record = logging.LogRecord(
        "httpx",
        logging.INFO,
        __file__,
        1,
        "HTTP Request: POST %s",
        (f"https://api.telegram.org/bot{TOKEN}/getMe",),
        None,
    )
    RedactingFilter([]).filter(record)
    text = render(record)
    assert TOKEN not in text
    assert f"https://api.telegram.org/bot{REDACTED}/getMe" in text


def test_api_key_in_message_and_exception_text_is_redacted() -> None:
    try:
        raise RuntimeError(f"auth failed for key {API_KEY}")
    except RuntimeError:
        import sys

        record = logging.LogRecord(
            "agent", logging.ERROR, __file__, 1, "calling with %s", (API_KEY,), sys.exc_info()
        )
    RedactingFilter([API_KEY]).filter(record)
    text = render(record)
    assert API_KEY not in text
    assert text.count(REDACTED) == 2


def test_console_logs_go_to_a_file_named_once(tmp_path: Path) -> None:
    from gateway.app.logsetup import setup_console_logging
    from gateway.config import Settings

    path = tmp_path / "logs" / "chat.log"
    settings = Settings(_env_file=None, console={"log_file": str(path)}, anthropic_api_key=API_KEY)
    line = setup_console_logging(settings)
    logging.getLogger("gateway.test").info("turn done with key %s", API_KEY)
    for handler in logging.getLogger().handlers:
        handler.flush()
    assert line == f"(logs: {path})"
    written = path.read_text(encoding="utf-8")
    assert "turn done with key" in written
    assert API_KEY not in written
    quiet = Settings(_env_file=None, console={"log_file": "off"})
    assert "warnings and errors only" in setup_console_logging(quiet)
    assert logging.getLogger().level == logging.WARNING


def test_doctor_report_is_not_interleaved_with_info_log_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gateway.__main__ import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'doctor.db'}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LOG_LEVEL", "INFO")
    main(["doctor"])
    captured = capsys.readouterr()
    assert "Checks" in captured.out
    assert " INFO " not in captured.out + captured.err, captured.err


def test_log_lines_follow_stderr_when_it_is_swapped_and_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from gateway.app.logsetup import setup_logging
    from gateway.config import Settings

    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    setup_logging(Settings(_env_file=None))
    logging.getLogger("gateway.test").warning("one")
    first.close()  # a terminal UI or a test's capture went away
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("gateway.test").warning("two")
    assert "gateway.test: two" in second.getvalue()
    assert "Logging error" not in second.getvalue()
