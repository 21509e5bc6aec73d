"""Older environment names keep working and are named with the one to use instead; `python -m gateway`
says so in one line at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config import load_settings, older_names


@pytest.fixture(autouse=True)
def clean_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in ("MODEL_CONTEXT_LENGTH", "CONTEXT__PLANNED_WINDOW", "DISCORD__SHARD_COUNT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_section_key_with_one_underscore_works_and_names_the_new_spelling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DISCORD_SHARD_COUNT", "3")
    monkeypatch.setenv("MODEL_CONTEXT_LENGTH", "150000")
    settings = load_settings()
    assert settings.discord.shard_count == 3
    assert settings.planned_window == 150_000
    assert set(settings.renamed) == {
        ("DISCORD_SHARD_COUNT", "DISCORD__SHARD_COUNT"),
        ("MODEL_CONTEXT_LENGTH", "CONTEXT__PLANNED_WINDOW"),
    }


def test_older_names_in_dotenv_work_too(clean_dir: Path) -> None:
    (clean_dir / ".env").write_text("COMPRESSION_THRESHOLD=0.4\n")
    settings = load_settings()
    assert settings.compression.threshold == 0.4
    assert settings.renamed == (("COMPRESSION_THRESHOLD", "COMPRESSION__THRESHOLD"),)


def test_the_new_name_wins_over_the_older_one() -> None:
    values, renamed = older_names({"DISCORD_SHARD_COUNT": "3", "DISCORD__SHARD_COUNT": "4"})
    assert values == {}
    assert renamed == [("DISCORD_SHARD_COUNT", "DISCORD__SHARD_COUNT")]


def test_current_names_are_not_reported() -> None:
    current = {"TELEGRAM_BOT_TOKEN": "x", "COMPRESSION__THRESHOLD": "0.4", "PATH": "/bin"}
    assert older_names(current) == ({}, [])


def test_start_up_warns_in_one_line(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "DISCORD_SHARD_COUNT": "2"}
    env["DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'g.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "db", "current"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "DISCORD_SHARD_COUNT" in line]
    assert warned == [
        "gateway: DISCORD_SHARD_COUNT is an older name and still works; use DISCORD__SHARD_COUNT"
    ]
