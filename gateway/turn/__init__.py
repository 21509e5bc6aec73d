"""One chat's turn: the per-chat tasks and their retries, the runner, the turn as one value with its
request window, what a turn records, the session kit and the tools."""
