"""Discord on discord.py."""
