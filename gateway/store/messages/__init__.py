"""A session's messages: appending them, the active window, the per-message queries, media, command
receipts and voice-note transcripts."""
