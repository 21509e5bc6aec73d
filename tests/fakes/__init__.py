"""Protocol-level fakes of the services the gateway talks to, for tests and benchmarks: one package per
service with several parts (``anthropic``, ``telegram``, ``discord``, ``embeddings``), each importing its
server from the package (``from tests.fakes.anthropic import FakeAnthropic``), and ``transcription`` for
the speech-to-text endpoint. The ``test_*`` modules here check the fakes against the real clients."""
