"""A fake Telegram Bot API (``server``) that python-telegram-bot talks to over real HTTP: HTML parse mode
(``html_parser``), updates (``updates``), files (``files``) and the wire shapes (``wire``)."""

from tests.fakes.telegram.server import FakeTelegram
from tests.fakes.telegram.wire import Sent

__all__ = ["FakeTelegram", "Sent"]
