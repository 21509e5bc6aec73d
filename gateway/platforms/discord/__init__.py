"""Discord on discord.py.

discord.py is imported here first, with the warning it raises filtered out once for the package:
it imports the stdlib `audioop` (voice only, unused here), deprecated since 3.11. Every module below
is imported after this one, so their own `import discord` finds the library already loaded.
"""

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="'audioop' is deprecated", category=DeprecationWarning)
    import discord  # noqa: F401
