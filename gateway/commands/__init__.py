"""Chat commands: the menu, admin commands, pins and the `/stats` renderings."""
