"""Voice notes heard: a client for the OpenAI-compatible speech-to-text protocol
(`POST {base_url}/audio/transcriptions`) and the limits a voice note must meet before it is sent.

Off unless `TRANSCRIPTION__PROVIDER` is set. Every failure is raised as `TranscriptionError`, which
names its cause (for counting) and a reason worded for the sender; nothing here retries or swallows.
"""
