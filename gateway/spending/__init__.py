"""The hard spending caps on every model call: the budget that reserves and settles, and the client
that asks it before each call."""
