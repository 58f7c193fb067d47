"""The token-id dialect of a vLLM endpoint, for the replay model and the test endpoints.

Training's capture proxy (openenv's ``CaptureServer``) sends every upstream request with
``logprobs: true``, ``return_token_ids: true`` and ``top_logprobs: 0``; vLLM served with
``--return-tokens-as-token-ids`` answers with a top-level ``prompt_token_ids``,
``choices[0].token_ids`` and ``choices[0].logprobs.content[]`` (one entry per sampled token,
``token`` spelled ``token_id:N``). :func:`add_token_fields` adds exactly those fields to a
non-streamed chat completion, so a rollout through the capture proxy is trainable offline.

The ids come from a stand-in tokenizer, not a model's: the request is rendered as a fixed chat
template (tools, then each message, then an assistant header), each segment is split into words,
spaces and punctuation, and each piece becomes ``crc32(piece) % VOCAB``. Segments are tokenized
separately, so a conversation that grows by appending keeps its earlier ids and turn k+1's prompt
starts with turn k's prompt, as an engine's would. Logprobs are a fixed function of the id (all in
[-1.02, -0.05]). Pure: no I/O.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

__all__ = ["LEVELS", "add_token_fields", "completion_ids", "prompt_ids", "text_ids"]

VOCAB = 151_643  # Qwen's vocabulary size; any positive number would do
LEVELS = ("tokens", "logprobs", "text")  # what an endpoint can return, as openenv's probe grades it
_PIECE = re.compile(r"\w+|\s+|[^\w\s]")


def text_ids(text: str) -> list[int]:
    return [zlib.crc32(piece.encode("utf-8")) % VOCAB for piece in _PIECE.findall(text)]


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def _message_body(message: dict) -> list[str]:
    segments = [_text_of(message.get("content"))]
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            segments.append(f"<|call|>{function.get('name')}<|args|>{function.get('arguments')}")
    if message.get("tool_call_id"):
        segments.append(f"<|call_id|>{message.get('tool_call_id')}")
    return segments


def prompt_ids(request: dict) -> list[int]:
    """The prompt's ids: what an engine would echo as ``prompt_token_ids``."""
    segments: list[str] = []
    if request.get("tools"):
        segments.append("<|tools|>" + json.dumps(request["tools"], sort_keys=True, ensure_ascii=False))
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            segments.append(f"<|{message.get('role')}|>")
            segments.extend(_message_body(message))
            segments.append("<|end|>")
    segments.append("<|assistant|>")
    return [token for segment in segments for token in text_ids(segment)]


def completion_ids(message: dict) -> list[int]:
    """The sampled ids of an assistant message: its body, then the end marker."""
    return [token for segment in [*_message_body(message), "<|end|>"] for token in text_ids(segment)]


def _logprob(token: int) -> float:
    return -(0.05 + (token % 98) / 100)


def add_token_fields(body: dict[str, Any], request: dict, level: str = "tokens") -> dict[str, Any]:
    """Add what the request asked for and ``level`` allows to a chat completion ``body``.

    ``tokens``: ids (when ``return_token_ids``) and ``token_id:N`` logprobs (when ``logprobs``);
    ``logprobs``: logprobs spelled as text, no ids (an OpenAI-like endpoint); ``text``: nothing.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    choice = body["choices"][0]
    sampled = completion_ids(choice.get("message") or {})
    if level == "tokens" and request.get("return_token_ids"):
        body["prompt_token_ids"] = prompt_ids(request)
        choice["token_ids"] = sampled
    if level != "text" and request.get("logprobs"):
        def spelled(token: int) -> str:
            return f"token_id:{token}" if level == "tokens" else f"t{token}"

        choice["logprobs"] = {
            "content": [
                {"token": spelled(token), "logprob": _logprob(token), "bytes": list(spelled(token).encode()), "top_logprobs": []}
                for token in sampled
            ]
        }
    return body
