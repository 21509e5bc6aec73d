"""One chat's turn: the per-chat tasks and their retries, the runner, what a turn records, the request
window, the session kit and the tools."""
