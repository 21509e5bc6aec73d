"""The local terminal chat."""

CONSOLE_USER_ID = "local"
"""The console's one user (always an admin)."""
