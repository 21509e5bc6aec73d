"""Telegram on python-telegram-bot."""
