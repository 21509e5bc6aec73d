"""What goes back to the chat: the outbox (delivery), live replies, and every wording."""
