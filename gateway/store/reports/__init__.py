"""What the store reports of what it recorded: model usage (`llm_calls`), `/stats` (per chat and global),
call outcomes, the prompt cache's waste; `ReportStore` is what `/stats` reads."""
