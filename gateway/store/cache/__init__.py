"""The prompt cache's state per session and when the keep-alive job looks at it."""
