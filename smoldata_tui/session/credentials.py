"""What counts as a secret in saved episode data: config keys by their names, values by their
shapes. Used wherever a config, a grader's output or an error is kept or shown. Pure: no I/O."""

from __future__ import annotations

import re

REDACTED = "[redacted]"

SECRET_NAME = re.compile(r"key|token|secret|password|passwd|authorization|credential|cookie", re.IGNORECASE)
_SECRET_NAME = SECRET_NAME
# A count such as max_tokens is not a secret: "tokens" (plural) holding a number is kept.
_TOKEN_COUNT_NAME = re.compile(r"tokens(?![a-z])", re.IGNORECASE)
_CREDENTIAL = re.compile(
    r"(?:\b(?:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}"  # an Authorization header value
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"  # OpenAI / Anthropic style keys
    r"|\bhf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bdtn_[A-Za-z0-9]{16,}"  # Daytona
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # a JWT
    r"|(?<=://)[^/\s:@]+:[^/\s@]+(?=@))",  # user:password@ in a URL
    re.IGNORECASE,
)


def looks_like_credential(text: str) -> bool:
    return _CREDENTIAL.search(text) is not None


def redact_text(text: str) -> str:
    """Free text (grader output, an error) with anything credential-like replaced."""
    return _CREDENTIAL.sub(REDACTED, text)


def _secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def redact(value: object, _name: str = "") -> object:
    """A copy of a config value without secrets (see the module docstring)."""
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            name = str(key)
            if _secret_name(name):
                is_count = isinstance(item, (int, float)) and not isinstance(item, bool)
                if not (
                    is_count and _TOKEN_COUNT_NAME.search(name) and not _secret_name(_TOKEN_COUNT_NAME.sub("", name))
                ):
                    continue
            if isinstance(item, str) and looks_like_credential(item):
                continue
            kept[name] = redact(item, name)
        return kept
    if isinstance(value, (list, tuple)):
        return [REDACTED if isinstance(item, str) and looks_like_credential(item) else redact(item) for item in value]
    if isinstance(value, str) and looks_like_credential(value):
        return REDACTED
    return value
