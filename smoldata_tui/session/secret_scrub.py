"""Keep the model endpoint's key out of everything we save or show, even when the agent prints it.

The key must sit in the sandbox's ``opencode.json`` (OpenCode reads it there; opencode_env also puts
it in the agent's environment), so an agent that runs ``cat ~/.config/opencode/opencode.json`` or
``env`` writes it into its own log. Every byte of that log passes through a :class:`SecretScrubber`
before it reaches disk or the screen: each occurrence becomes ``*`` of the same length, so line
lengths, offsets and the JSON structure (hence the verdict) stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterable

MIN_SECRET_LENGTH = 8  # shorter "keys" (vLLM's EMPTY, "none") are placeholders, and would mask words


class SecretScrubber:
    def __init__(self, secrets: Iterable[str | None]) -> None:
        self._secrets = sorted({s.encode() for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
        self._pending = b""

    @property
    def active(self) -> bool:
        return bool(self._secrets)

    def feed(self, data: bytes) -> bytes:
        """The part of the stream that is safe to pass on now. Bytes that may be the start of a
        secret cut by the chunk boundary wait for the next chunk (or :meth:`flush`)."""
        if not self._secrets:
            return data
        buffer = self._mask(self._pending + data)
        held = self._partial_suffix(buffer)
        self._pending = buffer[len(buffer) - held :] if held else b""
        return buffer[: len(buffer) - held]

    def flush(self) -> bytes:
        """The held bytes, at the end of the stream: a cut-off secret (the agent was killed while
        printing it) is masked too once it is long enough to give part of the key away."""
        rest, self._pending = self._pending, b""
        return b"*" * len(rest) if len(rest) >= MIN_SECRET_LENGTH else rest

    def text(self, value: str) -> str:
        """``value`` with the secrets masked (for strings that are not part of the stream)."""
        for secret in self._secrets:
            plain = secret.decode()
            value = value.replace(plain, "*" * len(plain))
        return value

    def _mask(self, data: bytes) -> bytes:
        for secret in self._secrets:
            if secret in data:
                data = data.replace(secret, b"*" * len(secret))
        return data

    def _partial_suffix(self, data: bytes) -> int:
        """The length of the longest end of ``data`` that begins some secret."""
        longest = 0
        for secret in self._secrets:
            for size in range(min(len(secret) - 1, len(data)), longest, -1):
                if data.endswith(secret[:size]):
                    longest = size
                    break
        return longest
