"""A credential an agent read or printed is never shown or reported: `check` (text and JSON) and the
viewer (timeline, detail, raw JSON, conversation) show ``[redacted]`` in its place, while prose that
only looks like a header ("a basic analysis") is kept. The fast search in front of the pattern
finds exactly what the pattern alone finds."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from smoldata_tui.masking import _CREDENTIAL_IN_PROSE, _PROSE_CREDENTIAL_STARTS, REDACTED, redact_shown_text
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.ui.safe_text import safe_text

from .test_ui_helpers import detail_text, loaded, replay_app, screen_lines

KEYS = {
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github": "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk",
    "header": "Authorization: Bearer Zm9vYmFyYmF6cXV4",
    "url": "https://deploy:hunter2hunter2@example.com/x",
}
SHOWN_PARTS = ("sk-ant-api03", "ghp_ABCDEF", "AKIAIOSFODNN7", "eyJhbGciOi", "Zm9vYmFyYmF6", "hunter2")
PROSE = "Let me do a basic analysis first; token counting comes later. The Bearer of bad news: region West."


def _whole_scan(text: str) -> str:
    return _CREDENTIAL_IN_PROSE.sub(REDACTED, text)


def test_keys_and_named_headers_are_redacted_and_prose_is_kept():
    text = " ".join(KEYS.values()) + "\n" + PROSE
    shown = redact_shown_text(text)
    assert not [part for part in SHOWN_PARTS if part in shown], shown
    assert shown.count(REDACTED) == len(KEYS)
    assert shown.endswith("\n" + PROSE)
    assert "https://" + REDACTED + "@example.com/x" in shown  # the host stays
    assert redact_shown_text("Bearer 0123456789abcdefXYZ") == REDACTED  # a header value with digits, unnamed


# Fragments a credential's start can be built from, in any case, with the non-ASCII letters the
# pattern takes for ASCII ones (Kelvin sign, long s, dotless and dotted i) and ones casefold widens.
FRAGMENTS = [*_PROSE_CREDENTIAL_STARTS, *(start.upper() for start in _PROSE_CREDENTIAL_STARTS), "Bearer", "Authorization:",
             "://", "@", ":", "=", " ", "\n", "-", "_", ".", "a", "Z", "0", "7", "abcdefgh", "0123456789", "ABCDEFGHIJKLMNOP",
             "\u212a", "\u017f", "\u0131", "\u0130", "\u00df", "é", "—"]  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30))
def test_the_fast_search_finds_exactly_what_the_pattern_finds(pieces):
    text = "".join(pieces)
    assert redact_shown_text(text) == _whole_scan(text)


# What completes each start into a credential the pattern takes.
TAILS = {"authorization": ": Bearer abcdefgh12345678", "bearer": " 0123456789abcdefgh", "basic": " 0123456789abcdefgh",
         "token": " 0123456789abcdefgh", "xox": "b-0123456789ab", "akia": "0123456789ABCDEF",
         "eyj": "ABCDEFGHIJ.eyJABCDEFGHIJ.xyz"}  # fmt: skip


def _completed(start: str) -> str:
    return start + TAILS.get(start, "ABCDEFGHIJKLMNOPQRSTUV0123")


def test_every_letter_the_pattern_folds_to_a_start_is_found():
    """A non-ASCII character the pattern's IGNORECASE takes for a letter of a start (Kelvin sign for
    k, long s for s, dotless and dotted i for i) still gets its credential redacted."""
    for start in _PROSE_CREDENTIAL_STARTS:
        assert _whole_scan("x " + _completed(start) + " y") == f"x {REDACTED} y", start
    letters = sorted({letter for start in _PROSE_CREDENTIAL_STARTS for letter in start if letter.isalpha()})
    tried = []
    for code in range(0x80, 0x10000):
        character = chr(code)
        for letter in letters:
            if not re.fullmatch(letter, character, re.IGNORECASE):
                continue
            for start in _PROSE_CREDENTIAL_STARTS:
                if letter in start:
                    text = "x " + _completed(start).replace(letter, character, 1) + " y"
                    if _whole_scan(text) != text:
                        tried.append((character, start))
                    assert redact_shown_text(text) == _whole_scan(text), (hex(code), start)
    assert {character for character, _start in tried} >= {"\u212a", "\u017f", "\u0131", "\u0130"}


def test_safe_texts_fast_path_redacts_too():
    clean = "total 8\n" + KEYS["aws"] + "\n"
    assert safe_text(clean) == "total 8\n" + REDACTED + "\n"
    assert safe_text("\x1b[31m " + KEYS["github"]) == "\u241b[31m " + REDACTED


def _trace_with_keys(path):
    builder = TraceBuilder()
    builder.step_start()
    builder.text("Reading the config. " + PROSE)
    builder.bash("cat ~/.aws/credentials", f"aws_access_key_id = {KEYS['aws']}\n{KEYS['header']}\n", description="Read credentials")
    builder.tool("read", {"filePath": "/home/user/.env"}, status="error", error=f"denied: {KEYS['anthropic']} {KEYS['url']}")
    builder.step_finish("tool-calls")
    builder.error("APIError", f"401 invalid key {KEYS['github']} {KEYS['jwt']}")
    path.write_bytes(builder.dumps())
    return path


def test_check_never_prints_a_credential(tmp_path):
    trace = _trace_with_keys(tmp_path / "run.jsonl")
    for arguments in ([], ["--json", "--no-cache"], ["--summary"]):
        result = subprocess.run([sys.executable, "-m", "smoldata_tui", "check", *arguments, str(trace)],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        output = result.stdout + result.stderr
        assert result.returncode in (0, 1), output
        assert not [part for part in SHOWN_PARTS if part in output], (arguments, output)
    findings = json.loads(subprocess.run([sys.executable, "-m", "smoldata_tui", "check", "--json", "--no-cache", str(trace)],
                                         capture_output=True, text=True, timeout=60).stdout)["findings"]  # fmt: skip
    assert any(REDACTED in finding["message"] for finding in findings), findings


async def test_the_viewer_never_shows_a_credential(tmp_path):
    app = replay_app(_trace_with_keys(tmp_path / "run.jsonl"))
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await loaded(pilot)
        seen = []
        for index in range(screen.timeline.row_count):
            screen.timeline.move_cursor(index)
            await pilot.pause(0.05)
            seen.append(detail_text(app))
            seen.append("\n".join(screen_lines(app)))
            await pilot.press("r")  # the event's raw JSON
            await pilot.pause(0.05)
            seen.append(detail_text(app) + "\n".join(screen_lines(app)))
            await pilot.press("r")
        await pilot.press("c")  # the conversation
        await pilot.pause(0.2)
        seen.append("\n".join(screen_lines(app)))
    everything = "\n".join(seen)
    assert REDACTED in everything
    assert "basic analysis" in everything  # prose is kept
    assert not [part for part in SHOWN_PARTS if part in everything]
