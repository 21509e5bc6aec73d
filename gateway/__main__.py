"""The command line: `gateway run | chat | db upgrade|downgrade|current | doctor`.

Configuration errors (including a platform refusing the token or a permission) print one line and
exit 2; database errors and other start-up failures print one line and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from gateway.app.logsetup import setup_console_logging, setup_logging
from gateway.config import ConfigError, Settings, load_settings
from gateway.errors import PlatformConfigError, PlatformStartError, StoreError

logger = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description="Multi-platform chat gateway for Claude.")
    parser.add_argument("--config", type=Path, help="YAML settings file (default: ./config.yaml if present)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("run", help="serve every configured platform")
    chat = commands.add_parser("chat", help="talk to the bot in this terminal")
    chat.add_argument(
        "--demo", action="store_true", help="no API key: a local fake model answers (a clone of the repo)"
    )
    commands.add_parser("doctor", help="check configuration, database and the Anthropic endpoint")
    db = commands.add_parser("db", help="database migrations")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    upgrade = db_commands.add_parser("upgrade", help="migrate to the newest schema (or REVISION)")
    upgrade.add_argument("revision", nargs="?", default="head")
    downgrade = db_commands.add_parser("downgrade", help="migrate back to REVISION ('base' empties it)")
    downgrade.add_argument("revision")
    db_commands.add_parser("current", help="show the schema revision and the newest one")
    return parser


def _setup_logging(settings: Settings, command: str) -> None:
    if command == "chat":
        # The terminal is the conversation: logs go to a file (named once, here) or stay at warnings.
        print(setup_console_logging(settings), file=sys.stderr)
    else:
        setup_logging(settings, report=command == "doctor")


def _serve_entry(name: str) -> Callable[[Settings], int] | None:
    try:
        from gateway.app import serve
    except ModuleNotFoundError as exc:
        if exc.name != "gateway.app.serve":
            raise
        print(
            "gateway: the serve module (gateway/app/serve.py) is not available in this build", file=sys.stderr
        )
        return None
    entry: Callable[[Settings], int] = getattr(serve, name)
    return entry


def _db(settings: Settings, action: str, revision: str | None) -> int:
    from gateway.store import migrate

    # Alembic logs every step it takes at INFO; the command says where the schema ended up in one line.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    if action == "upgrade":
        migrate.upgrade(settings.database_url, revision or "head")
    elif action == "downgrade":
        migrate.downgrade(settings.database_url, revision or "base")
    current = asyncio.run(migrate.current_revision_async(settings.database_url))
    print(f"schema revision: {current or 'none'} (head: {migrate.head_revision()})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = load_settings(yaml_path=args.config)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    for older, newer in settings.renamed:
        print(f"gateway: {older} is an older name and still works; use {newer}", file=sys.stderr)
    try:
        _setup_logging(settings, args.command)
    except OSError as exc:
        print(f"gateway: cannot open the log file: {exc}", file=sys.stderr)
        return 1
    try:
        if args.command == "db":
            return _db(settings, args.db_command, getattr(args, "revision", None))
        if args.command == "doctor":
            from gateway.app.doctor import doctor

            return doctor(settings, out=sys.stdout)
        if args.command == "chat" and args.demo:
            from gateway.app.demo import chat_demo

            return chat_demo(settings)
        entry = _serve_entry(args.command)
        return 1 if entry is None else entry(settings)
    except ConfigError as exc:
        print(f"gateway: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"gateway: {exc}", file=sys.stderr)
        return 1
    except PlatformConfigError as exc:
        print(f"gateway: {exc}", file=sys.stderr)
        return 2
    except PlatformStartError as exc:
        print(f"gateway: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
