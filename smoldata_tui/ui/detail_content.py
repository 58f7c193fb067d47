"""What the detail pane says about one event, as blocks of neutralised lines.

Pure Python (no Textual, no Rich). A block is ``(style name, lines)``: every control character
already replaced by a visible stand-in, so the view only has to wrap and colour. Style names
are the ``detail--<name>`` component classes of the view. Blocks rather than one tuple per line
because a 10 MB output is 100,000 lines, and that many small objects cost real time.
"""

from __future__ import annotations

from smoldata_tui.trace import EventRecord, Finding
from smoldata_tui.trace.event_detail import DetailSection, detail_sections, pretty_json
from smoldata_tui.trace.number_format import format_duration, format_offset
from smoldata_tui.trace.summary import Parsed, parse_line, summarize_parsed
from smoldata_tui.trace.text import byte_size, neutralize
from smoldata_tui.ui.safe_text import safe_text

Block = tuple[str, list[str]]
SEVERITY_MARK = {"error": "\u2717", "warning": "!", "info": "\u00b7"}
BLANK: Block = ("plain", [""])


def body(text: str, style: str) -> Block:
    return (style, safe_text(text.replace("\r\n", "\n") if "\r" in text else text).split("\n"))


def heading(title: str) -> Block:
    return ("heading", [f"\u2500\u2500 {title} "])


def block_text(blocks: list[Block]) -> str:
    """All the lines, joined (for copying and for tests)."""
    return "\n".join("\n".join(lines) for _style, lines in blocks)


def event_heading(
    record: EventRecord, parsed: Parsed, first_timestamp: float | None, step_started: float | None
) -> list[Block]:
    summary = summarize_parsed(parsed, record.kind, step_started_ms=step_started)
    facts = [neutralize(record.kind, keep_newlines=False)]
    if record.tool:
        facts.append(neutralize(record.tool, keep_newlines=False))
    line = f"line {record.line}" + (f" (piece {record.piece})" if record.piece else "")
    facts.append(line)
    if record.step:
        facts.append(f"step {record.step}")
    if record.timestamp is not None and first_timestamp is not None:
        facts.append(format_offset(record.timestamp - first_timestamp))
    if summary.duration_ms is not None:
        facts.append(f"took {format_duration(summary.duration_ms)}")
    if summary.status:
        facts.append(summary.status)
    blocks: list[Block] = [("title", ["  \u00b7  ".join(facts)])]
    if summary.title:
        blocks.append(("error" if summary.is_error else "plain", [summary.title]))
    return blocks


def findings_blocks(findings: list[Finding]) -> list[Block]:
    blocks: list[Block] = []
    for finding in findings:
        severity = finding.severity.value
        related = f" (see line {finding.related_line})" if finding.related_line else ""
        message = neutralize(finding.message, keep_newlines=False)
        blocks.append((severity, [f"{SEVERITY_MARK[severity]} {finding.kind}: {message}{related}"]))
    return blocks


def detail_blocks(
    record: EventRecord,
    raw: bytes,
    findings: list[Finding],
    *,
    first_timestamp: float | None,
    step_started: float | None = None,
    raw_mode: bool = False,
) -> list[Block]:
    """The whole detail of one event; ``raw_mode`` shows the exact line instead of sections.
    ``raw`` may be only the head of a huge line (see ``LineSource.read_shown``): then that is said."""
    clipped = len(raw) < record.length
    parsed = parse_line(raw, record.piece)
    if parsed.error is not None and not parsed.text:
        parsed.text = raw.decode("utf-8", "replace")
    blocks = event_heading(record, parsed, first_timestamp, step_started)
    if clipped:
        note = f"line {record.line}: {byte_size(record.length)}, showing the first {byte_size(len(raw))}"
        blocks = [heading(note), BLANK, *blocks]
    if findings:
        blocks.append(BLANK)
        blocks.extend(findings_blocks(findings))
    if raw_mode:
        blocks += [
            BLANK,
            heading(f"line {record.line}, exactly as written ({len(raw):,} bytes)  r: back to the fields"),
        ]
        blocks.append(body(raw.decode("utf-8", "replace"), "code"))
        if parsed.error is None:
            blocks += [BLANK, heading("pretty-printed"), body(pretty_json(parsed.value), "json")]
        return blocks
    sections: list[DetailSection] = detail_sections(parsed, record.kind)
    for section in sections:
        blocks += [BLANK, heading(section.title), body(section.body, section.style)]
    return blocks
