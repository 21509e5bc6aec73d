"""What the fleet registered with the platforms: each bot's webhook as last set."""
