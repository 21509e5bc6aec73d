"""`python -m tests.fakes.anthropic --port 0`: the fake Anthropic API in its own process (see `process`)."""

from tests.fakes.anthropic.process import main

main()
