"""Prompt caching, one owner: breakpoint placement (`markers`), the TTL cost policy (`policy`), cache
health (`health`) and the per-turn plan over the session's stored cache state (`plan`). All pure."""
