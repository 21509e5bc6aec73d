"""The admin web dashboard (`DASHBOARD__PORT`): spend against the caps, chats and their context, what
each compaction did, and two actions (Compact, Undo) through the same code as `/compact`.

`guard` (who may use it: password, sessions, CSRF, Host and Origin, trusted proxies, login rate limit),
`server` (the aiohttp app and its routes), `pages` (read, shape, render), `views` (pure shaping for the
templates), `actions` (compact and undo, audited); `templates/` (Jinja2, autoescaped) and `static/` (the
stylesheet, the chart script and the vendored uPlot, so nothing loads from elsewhere).
"""
