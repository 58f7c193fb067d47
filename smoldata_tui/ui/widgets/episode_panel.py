"""The saved episode's metadata: the grade first (reward, correctness, grader output), then the rest."""

from __future__ import annotations

import json
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from smoldata_tui.trace.integrity import trace_integrity_findings
from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.replay.divergence import describe_divergence
from smoldata_tui.session.proxy_trace import ProxyTurn, load_proxy_trace, summary_line
from smoldata_tui.trace.finding import Finding
from smoldata_tui.trace.text import byte_size, clip, neutralize
from smoldata_tui.training.capture import describe_capture
from smoldata_tui.ui.theme_text import ThemedStatic
from smoldata_tui.ui.widgets.sandbox_rows import sandbox_rows


def _field(text: Text, name: str, value: object) -> None:
    if value is None or value == "" or value == {}:
        return
    text.append(f"{name:<17}", "bold")
    text.append(neutralize(str(value), keep_newlines=False) + "\n")


def cap_line(cap: dict) -> str:
    """``agent_log: 1.0 GiB seen, cut at 64 MiB``."""
    def size(value: object) -> str:
        return byte_size(value) if isinstance(value, int) and not isinstance(value, bool) else "?"

    return neutralize(f"{cap.get('cap')}: {size(cap.get('seen'))} seen, cut at {size(cap.get('limit'))}", keep_newlines=False)


def grade_text(metadata: EpisodeMetadata) -> Text:
    grade = metadata.grade
    text = Text()
    if grade is None:
        return text
    text.append("Grade\n", "bold underline")
    if grade.env_reward is not None:
        text.append(f"{'env_reward':<17}", "bold")
        text.append(f"{grade.env_reward:g}\n", "bold $success" if grade.env_reward > 0 else "bold $error")
    if grade.correctness is not None:
        text.append(f"{'correctness':<17}", "bold")
        text.append(f"{grade.correctness:g}\n", "$success" if grade.correctness > 0 else "$error")
    if grade.grader_error:
        text.append(f"{'grader error':<17}", "bold")
        text.append(neutralize(grade.grader_error) + "\n", "$error")
    if grade.grader_output:
        text.append("grader output\n", "bold")
        text.append(neutralize(grade.grader_output).rstrip("\n") + "\n", "dim")
    text.append("\n")
    return text


def integrity_text(findings: list[Finding]) -> Text:
    """The reward-integrity rules' findings, beside the grade (trace/integrity.py)."""
    text = Text()
    text.append(f"{'integrity':<17}", "bold")
    if not findings:
        text.append("no rule broken (verifier files, input read, answer checked, writes)\n\n", "dim")
        return text
    text.append(f"{len(findings)} finding(s): the grade may not be earned\n", "bold $warning")
    for finding in findings:
        style = "$error" if finding.severity.value == "error" else "$warning" if finding.severity.value == "warning" else "dim"
        text.append(f"! {finding.kind} line {finding.line}: {neutralize(clip(finding.message, 300), keep_newlines=False)}\n", style)
    text.append("\n")
    return text


def divergence_text(metadata: EpisodeMetadata | None, divergences: list[dict]) -> Text:
    """What a replay did differently from its recording (nothing for an episode that is no replay)."""
    text = Text()
    if divergences:
        text.append(f"Replay diverged from its recording ({len(divergences)})\n", "bold underline $warning")
        text.append("The grade is of what happened now, not of what was recorded.\n", "dim")
        for record in divergences:
            text.append(f"! {describe_divergence(record, limit=200)}\n", "$warning")
            if record.get("kind") == "result_changed":
                for label in ("recorded", "now"):
                    text.append(f"  {label:<9}", "bold")
                    text.append(clip(neutralize(str(record.get(label) or ""), keep_newlines=False), 300) + "\n", "dim")
        text.append("\n")
    elif metadata is not None and (metadata.model or "").startswith("replay") and metadata.status == "finished":
        text.append("Replay: no divergences", "bold $success")
        text.append(" (every recorded call gave its recorded result)\n\n", "dim")
    return text


def metadata_text(metadata: EpisodeMetadata | None, meta_name: str, problems: list[str],
                  divergences: list[dict] | None = None, integrity: list[Finding] | None = None) -> Text:  # fmt: skip
    text = Text()
    if metadata is None:
        text.append(f"No episode metadata ({meta_name} not found beside the trace).\n", "dim")
        text.append("Status and elapsed time are inferred from the trace itself.\n", "dim")
    else:
        text.append_text(grade_text(metadata))
        if integrity is not None and metadata.grade is not None:
            text.append_text(integrity_text(integrity))
        text.append_text(divergence_text(metadata, divergences or []))
        text.append("Episode\n", "bold underline")
        for name in (
            "task",
            "model",
            "backend",
            "harness",
            "opencode_version",
            "status",
            "exit_code",
            "started_at",
            "finished_at",
        ):
            _field(text, name.replace("_", " "), getattr(metadata, name))
        if metadata.duration_s is not None:
            _field(text, "duration", f"{metadata.duration_s:.1f} s")
        capture = describe_capture(metadata.capture)
        if capture is not None:
            text.append(f"{'capture':<17}", "bold")
            text.append(neutralize(capture, keep_newlines=False) + "\n", "$error" if capture.startswith("failed") else "")
        if rows := sandbox_rows(metadata.sandbox):
            text.append("\nSandbox\n", "bold underline")
            for name, value in rows:
                _field(text, name, value)
        if metadata.caps_hit:
            text.append("\nLimits hit (agent-controlled sizes the host capped)\n", "bold underline")
            for cap in metadata.caps_hit:
                text.append(f"! {cap_line(cap)}\n", "$warning")
        if metadata.recovered_calls:
            text.append("\nUnfinished calls recovered from opencode export\n", "bold underline")
            text.append("Running when the agent was stopped: the stream never shows them.\n", "dim")
            for call in metadata.recovered_calls:
                text.append(
                    f"✗ {clip(str(call.get('tool')), 20)} {clip(str(call.get('callID')), 40)} "
                    f"status {clip(str(call.get('status')), 20)}\n",
                    "bold $error",
                )
                text.append(f"  input  {clip(json.dumps(call.get('input'), ensure_ascii=False, default=str), 300)}\n")
                if call.get("partial_output"):
                    text.append(f"  output so far  {clip(str(call['partial_output']), 300)}\n", "dim")
        if metadata.timings:
            text.append("\nTimings\n", "bold underline")
            for stage, seconds in metadata.timings.items():
                _field(text, clip(stage, 16), f"{seconds:.2f} s")
        if metadata.config:
            text.append("\nConfig (secrets removed)\n", "bold underline")
            for key, value in metadata.config.items():
                shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
                _field(text, clip(str(key), 16), clip(shown, 300))
    if problems:
        text.append("\nProblems with the metadata file\n", "bold $warning")
        for problem in problems:
            text.append(f"! {neutralize(problem, keep_newlines=False)}\n", "$warning")
    return text


def proxy_text(turns: list[ProxyTurn], problems: list[str], name: str) -> Text:
    """opencode_env's proxy trace: one row per model call, and the totals."""
    text = Text()
    text.append("\nModel calls (opencode_env proxy trace)\n", "bold underline")
    text.append(neutralize(summary_line(turns), keep_newlines=False) + f"  [{neutralize(name)}]\n", "dim")
    text.append(f"{'turn':>4} {'kind':<5} {'finish':<11} {'tokens':>7} {'mean lp':>8} {'min lp':>8} {'latency':>8}\n", "bold")
    for turn in turns:
        row = (f"{turn.turn if turn.turn is not None else '?':>4} {'agent' if turn.with_tools else 'side':<5} "
               f"{clip(turn.finish_reason or '-', 11):<11} {turn.completion_tokens if turn.completion_tokens is not None else '-':>7} "
               f"{_float(turn.mean_logprob, '.3f'):>8} {_float(turn.min_logprob, '.3f'):>8} {_float(turn.latency_s, '.2f', ' s'):>8}\n")  # fmt: skip
        text.append(row, "$error" if turn.upstream_error else "")
        if turn.upstream_error:
            text.append(f"     upstream error: {neutralize(turn.upstream_error, keep_newlines=False)}\n", "$error")
    for problem in problems:
        text.append(f"! {neutralize(problem, keep_newlines=False)}\n", "$warning")
    return text


def _float(value: float | None, spec: str, unit: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{unit}"


INLINE_TRACE_BYTES = 4 << 20  # a trace this small is read for the integrity rules on the UI thread


def _trace_beside(folder: Path | None, metadata: EpisodeMetadata | None, meta_name: str) -> Path | None:
    """The trace the metadata describes: its ``trace`` field, else the name beside ``x.meta.json`` (``x.jsonl``)."""
    if folder is None or metadata is None:
        return None
    name = Path(metadata.trace).name if metadata.trace else meta_name.removesuffix(".meta.json") + ".jsonl"
    return folder / name


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class EpisodePanel(VerticalScroll):
    DEFAULT_CSS = "EpisodePanel { padding: 0 1; } EpisodePanel > Static { height: auto; }"

    def compose(self) -> ComposeResult:
        yield ThemedStatic(Text("Looking for the episode metadata…", "dim"), id="episode-text")

    def set_metadata(self, metadata: EpisodeMetadata | None, meta_name: str, problems: list[str],
                     folder: Path | None = None, divergences: list[dict] | None = None) -> None:  # fmt: skip
        trace = _trace_beside(folder, metadata, meta_name)
        integrity = None
        if trace is not None and _size(trace) <= INLINE_TRACE_BYTES:  # a few ms: shown with the grade at once
            integrity, trace = trace_integrity_findings(trace), None
        shown = metadata_text(metadata, meta_name, problems, divergences, integrity)
        self.query_one("#episode-text", Static).update(shown)
        if metadata is None or folder is None:
            return
        # A large trace (for the integrity rules) and a proxy trace (every request body): off the UI thread.
        proxy = folder / Path(metadata.proxy_trace).name if metadata.proxy_trace else None
        if trace is not None or proxy is not None:
            self.run_worker(lambda: self._load_more(metadata, meta_name, problems, divergences, integrity, trace, proxy),
                            thread=True, exclusive=True, group="episode-more")  # fmt: skip

    def _load_more(self, metadata: EpisodeMetadata, meta_name: str, problems: list[str], divergences: list[dict] | None,
                   integrity: list[Finding] | None, trace: Path | None, proxy: Path | None) -> None:  # fmt: skip
        integrity = trace_integrity_findings(trace) if trace is not None else integrity
        combined = metadata_text(metadata, meta_name, problems, divergences, integrity)
        if proxy is not None:
            turns, proxy_problems = load_proxy_trace(proxy)
            combined.append_text(proxy_text(turns, proxy_problems, proxy.name))
        self.app.call_from_thread(self.query_one("#episode-text", Static).update, combined)
