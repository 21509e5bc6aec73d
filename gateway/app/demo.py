"""`python -m gateway chat --demo`: the terminal chat without an API key, answered by the repository's
fake Anthropic API (`tests/fakes/anthropic`, which echoes each message) in a child process.

The fake is started as a process rather than imported, so the gateway never depends on the tests; it
lives in a clone of the repository, not in an installed package. The demo uses its own SQLite file in
a temporary folder, so nothing of it mixes with a real database, and every reply is labelled `demo>`.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import AnyHttpUrl, SecretStr

from gateway.config import ConfigError, Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
FAKE_PACKAGE = REPO_ROOT / "tests" / "fakes" / "anthropic"
DEMO_KEY = "demo-key"
START_TIMEOUT_S = 20.0


@contextmanager
def fake_model() -> Iterator[str]:
    """Start the fake Anthropic API on a free local port; yield its base URL; stop it on exit."""
    if not (FAKE_PACKAGE / "__main__.py").is_file():
        raise ConfigError(
            f"the demo needs the fake model in {FAKE_PACKAGE}, which a clone of the repository has; "
            "set ANTHROPIC_API_KEY and run `python -m gateway chat` instead"
        )
    command = [sys.executable, "-m", "tests.fakes.anthropic", "--port", "0", "--api-key", DEMO_KEY]
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    try:
        yield _listening(process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _listening(process: subprocess.Popen[str]) -> str:
    """The fake's URL from its `LISTENING <url>` line, or a `ConfigError` saying it did not start."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout=START_TIMEOUT_S)
    line = process.stdout.readline().strip() if ready else ""
    if not line.startswith("LISTENING "):
        raise ConfigError(f"the demo's fake model did not start (it said {line or 'nothing'!r})")
    return line.removeprefix("LISTENING ")


def demo_settings(settings: Settings, *, base_url: str, folder: Path) -> Settings:
    """`settings` pointed at the fake model, with a database of the demo's own."""
    return settings.model_copy(
        update={
            "anthropic_api_key": SecretStr(DEMO_KEY),
            "anthropic_base_url": AnyHttpUrl(base_url),
            "auxiliary": settings.auxiliary.model_copy(
                update={"compression": settings.auxiliary.compression.model_copy(update={"base_url": None})}
            ),
            "database_url": f"sqlite+aiosqlite:///{folder / 'demo.db'}",
            "spool_dir": folder / "spool",
        }
    )


def chat_demo(settings: Settings) -> int:
    from gateway.app import serve

    with tempfile.TemporaryDirectory(prefix="gateway-demo-") as folder, fake_model() as base_url:
        return serve.chat(demo_settings(settings, base_url=base_url, folder=Path(folder)), demo=True)
