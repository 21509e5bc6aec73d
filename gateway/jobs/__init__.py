"""Background jobs: the scheduler, maintenance jobs and the prompt-cache keep-alive."""
