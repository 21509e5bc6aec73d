"""`python -m gateway chat` with stdin that is not a terminal, as a real process: end of input ends the
chat with status 0 (`/dev/null`, a file, a pipe), each line of a file is answered before the next is
sent, and `chat --demo` answers with no API key at all (the fake model in a child process)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import base_env
from tests.fakes.anthropic.process import REPO_ROOT, spawn_fake_anthropic

pytestmark = pytest.mark.e2e

TIMEOUT_S = 60


def _chat(env: dict[str, str], cwd: Path, *args: str, **how: object) -> subprocess.CompletedProcess[str]:
    """The chat as a process; `how` says where its stdin comes from (`stdin=` a file, or `input=`)."""
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-m", "gateway", "chat", *args],
        **how,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO_ROOT), **env},
        timeout=TIMEOUT_S,
        check=False,
    )


def _chat_from(path: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    with path.open() as source:
        return _chat(env, cwd, stdin=source)


async def test_end_of_input_ends_the_chat_and_a_file_is_answered_line_by_line(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with spawn_fake_anthropic() as fake:
        env = base_env(database_url=sqlite_url, anthropic_url=fake.base_url, tmp=tmp_path)
        empty = await asyncio.to_thread(_chat_from, Path(os.devnull), env, tmp_path)
        assert empty.returncode == 0, empty.stderr
        lines = tmp_path / "lines.txt"
        lines.write_text("first question\nsecond question\n", encoding="utf-8")
        answered = await asyncio.to_thread(_chat_from, lines, env, tmp_path)
    assert answered.returncode == 0, answered.stderr
    replies = [line for line in answered.stdout.splitlines() if line.startswith("bot> ")]
    assert replies == ["bot> echo: first question", "bot> echo: second question"]


def test_the_demo_answers_without_a_key(tmp_path: Path) -> None:
    result = _chat({}, tmp_path, "--demo", input="hello there\n")  # a pipe; no key, no database set
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("DEMO: ")
    assert "demo> echo: hello there" in result.stdout.splitlines()
    assert not (tmp_path / "gateway.db").exists()  # the demo keeps its own database
