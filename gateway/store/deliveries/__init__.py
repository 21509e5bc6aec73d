"""Reply deliveries: each part of a reply with its state."""
