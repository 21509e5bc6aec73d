"""One chat's turn: the runner, what a turn records, the request window, the session kit and the tools."""
