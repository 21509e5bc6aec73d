"""Token estimates: offline cl100k, block costs, the rough fallback and per-model calibration."""

from __future__ import annotations

import logging
import math
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent import tokens
from agent.tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_RESULT_OVERHEAD,
    TOOL_USE_OVERHEAD,
    TOOLS_SYSTEM_OVERHEAD,
    CalibratedCounter,
    Calibration,
    estimate_block,
    estimate_message,
    estimate_messages,
    estimate_system,
    estimate_text,
    estimate_tools,
    rough_estimate_message,
    rough_estimate_messages,
    rough_estimate_text,
)
from agent.types import Message
from agent.usage import Usage

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_encoding(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Forget the loaded encoding (and cached lengths) for one test; restore them afterwards."""
    monkeypatch.setattr(tokens, "_encoding", tokens._UNLOADED)
    tokens._encoded_length.cache_clear()
    yield
    tokens._encoded_length.cache_clear()


OFFLINE_SCRIPT = textwrap.dedent(
    """
    import os, socket, sys

    def refuse(*args, **kwargs):
        raise OSError("network access blocked by test")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    import tiktoken
    try:
        tiktoken.get_encoding("cl100k_base")
    except Exception as exc:
        print("download-blocked", type(exc).__name__)
    else:
        sys.exit("tiktoken loaded cl100k_base without the network: the cache dir was not empty")

    from agent import tokens
    encoding = tokens.get_encoding()
    assert encoding is not None, "packaged cl100k data did not load"
    print("ids", encoding.encode_ordinary("hello world"))
    print("estimate", tokens.estimate_text("hello world"))
    print("cache-dir", sorted(os.listdir(os.environ["TIKTOKEN_CACHE_DIR"])))
    """
)


def test_cl100k_loads_with_network_blocked_and_an_empty_tiktoken_cache(tmp_path: Path) -> None:
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    # a minimal environment, so no pre-seeded cache or proxy setting leaks in from outside
    env = {"TIKTOKEN_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("download-blocked")
    assert "ids [15339, 1917]" in lines
    assert "estimate 2" in lines
    assert "cache-dir []" in lines


def test_known_token_counts() -> None:
    assert estimate_text("") == 0
    assert estimate_text("hello world") == 2
    # special-token text is ordinary text to us (it must not raise as tiktoken.encode would)
    assert estimate_text("<|endoftext|>") > 1
    # ten tokens per sentence; the trailing space of the last one is a token of its own
    assert estimate_text("The quick brown fox jumps over the lazy dog. " * 50) == 501


def test_tool_use_counts_name_and_input() -> None:
    small = {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}}
    large = {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x " * 500}}
    assert estimate_block(small) >= estimate_text("search") + TOOL_USE_OVERHEAD
    assert estimate_block(large) - estimate_block(small) >= 400


def test_tool_result_string_and_block_content_cost_the_same() -> None:
    text = "line of tool output\n" * 40
    as_string = {"type": "tool_result", "tool_use_id": "t1", "content": text}
    as_blocks = {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": text}]}
    assert (
        estimate_block(as_string) == estimate_block(as_blocks) == estimate_text(text) + TOOL_RESULT_OVERHEAD
    )


def test_images_cost_a_fixed_amount_not_their_base64_size() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 400_000}}
    assert estimate_block(image) == IMAGE_TOKENS
    message: Message = {"role": "user", "content": [image, {"type": "text", "text": "what is this?"}]}
    assert rough_estimate_message(message) == IMAGE_TOKENS + rough_estimate_text("what is this?") + 4


def test_text_documents_are_counted_by_their_text() -> None:
    body = "chapter one " * 300
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": body}}
    assert estimate_block(document) == estimate_text(body)


def test_unknown_blocks_cost_their_json_and_ignore_cache_markers() -> None:
    plain = {"type": "search_result", "source": "x", "title": "t", "content": [{"type": "text", "text": "y"}]}
    marked = {**plain, "cache_control": {"type": "ephemeral"}}
    assert estimate_block(plain) > 0
    assert estimate_block(marked) == estimate_block(plain)


def test_message_and_request_totals() -> None:
    messages: list[Message] = [
        {"role": "user", "content": "hello world"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello world"}]},
    ]
    assert estimate_message(messages[0]) == 2 + MESSAGE_OVERHEAD
    assert estimate_messages(messages) == 2 * (2 + MESSAGE_OVERHEAD)
    tool = {"name": "search", "description": "find things", "input_schema": {"type": "object"}}
    assert estimate_system("hello world") == 2
    assert estimate_tools([]) == 0
    assert estimate_tools([tool]) > TOOLS_SYSTEM_OVERHEAD


def test_rough_estimate_is_chars_over_four_rounded_up() -> None:
    assert rough_estimate_text("") == 0
    assert rough_estimate_text("a" * 10) == 3
    assert rough_estimate_text("a" * 12) == 3
    messages: list[Message] = [{"role": "user", "content": "a" * 40}, {"role": "assistant", "content": ""}]
    assert rough_estimate_messages(messages) == 10 + MESSAGE_OVERHEAD + MESSAGE_OVERHEAD


def test_rough_estimate_does_not_undercount_chinese() -> None:
    # 8 CJK characters: 1.5 each, where chars / 4 would say 2
    assert rough_estimate_text("你好世界你好世界") == 12
    assert rough_estimate_text("ab你好") == math.ceil(2 / 4 + 3)
    assert estimate_text("你好世界你好世界") > rough_estimate_text("你好世界你好世界") / 4


def test_unusable_data_falls_back_to_rough_with_a_warning(
    fresh_encoding: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tokens, "CL100K_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="sha256"):
        tokens._load_cl100k()
    with caplog.at_level(logging.WARNING, logger="agent.tokens"):
        assert tokens.get_encoding() is None
    assert any("rough" in r.getMessage() for r in caplog.records)
    text = "hello world, this is long enough to go through the cached path of the estimator"
    assert estimate_text(text) == rough_estimate_text(text)
    assert estimate_text("hello world") == rough_estimate_text("hello world")


def test_encoding_loads_once_across_threads(fresh_encoding: None, monkeypatch: pytest.MonkeyPatch) -> None:
    real_loader = tokens._load_cl100k
    loads: list[int] = []

    def slow_loader() -> object:
        loads.append(1)
        time.sleep(0.05)
        return real_loader()

    monkeypatch.setattr(tokens, "_load_cl100k", slow_loader)
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(tokens.get_encoding())) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1
    assert len({id(e) for e in seen}) == 1
    assert seen[0] is not None


# --- calibration ----------------------------------------------------------------------------------


def test_first_observation_sets_the_factor_and_later_ones_are_smoothed() -> None:
    calibration = Calibration("claude-sonnet-4-6")
    assert calibration.observe(estimated=10_000, reported=12_000)
    assert calibration.factor == pytest.approx(1.2)
    assert calibration.observe(estimated=10_000, reported=15_000)
    assert calibration.factor == pytest.approx(0.8 * 1.2 + 0.2 * 1.5)
    assert calibration.samples == 2
    assert calibration.apply(1_000) == math.ceil(1_000 * (0.8 * 1.2 + 0.2 * 1.5))


def test_reported_usage_counts_input_plus_cache_read_and_write() -> None:
    calibration = Calibration("m")
    usage = Usage(
        input_tokens=1_000,
        output_tokens=9_999,
        cache_read_input_tokens=8_000,
        cache_creation_input_tokens=2_000,
    )
    calibration.observe(estimated=10_000, reported=usage)
    assert calibration.factor == pytest.approx(1.1)


def test_factor_is_bounded() -> None:
    high = Calibration("m")
    high.observe(estimated=1_000, reported=50_000)
    assert high.factor == 2.0
    for _ in range(20):
        high.observe(estimated=1_000, reported=50_000)
    assert high.factor == 2.0
    low = Calibration("m")
    low.observe(estimated=10_000, reported=100)
    assert low.factor == 1.0  # never below the local estimate: too low would overflow the window
    assert Calibration.from_dict({"model": "m", "factor": 7.0}).factor == 2.0


def test_small_requests_do_not_move_the_factor() -> None:
    calibration = Calibration("m", factor=1.1, samples=3)
    assert not calibration.observe(estimated=499, reported=5_000)
    assert not calibration.observe(estimated=10_000, reported=0)
    assert calibration.factor == 1.1
    assert calibration.samples == 3


def test_calibration_round_trips_through_a_dict() -> None:
    calibration = Calibration("claude-haiku-4-5")
    calibration.observe(estimated=2_000, reported=2_500)
    restored = Calibration.from_dict(calibration.to_dict())
    assert restored == calibration
    assert restored.apply(0) == 0


def test_calibrated_counter_scales_message_estimates() -> None:
    calibration = Calibration("m", factor=1.5, samples=1)
    counter = CalibratedCounter(calibration)
    message: Message = {"role": "user", "content": "hello world " * 100}
    assert counter(message) == math.ceil(estimate_message(message) * 1.5)
    calibration.observe(estimated=10_000, reported=10_000)
    assert counter(message) == math.ceil(estimate_message(message) * (0.8 * 1.5 + 0.2))


def test_stored_media_count_their_own_cost_never_their_bytes() -> None:
    from agent.media import image_tokens, media_ref, page_image_tokens

    assert image_tokens(800, 600) == 640
    assert image_tokens(4000, 3000) == image_tokens(1568, 1176) == 2459  # the API fits it first
    assert page_image_tokens(612, 792) == 2534
    ref = media_ref(media_id=3, kind="image", media_type="image/png", tokens=640, width=800, height=600)
    message = {"role": "user", "content": [ref, {"type": "text", "text": "hi"}]}
    assert estimate_message(message) == 640 + estimate_text("hi") + 4  # type: ignore[arg-type]
    assert rough_estimate_message(message) == 640 + rough_estimate_text("hi") + 4  # type: ignore[arg-type]
    damaged = {**ref, "tokens": "lots"}
    assert estimate_block(damaged) == 0
