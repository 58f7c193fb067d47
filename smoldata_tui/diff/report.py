"""What a diff says about each side (verdict, grade, calls, tokens, duration) and its JSON form."""

from __future__ import annotations

from dataclasses import dataclass

from smoldata_tui.diff.calls import EpisodeCalls
from smoldata_tui.diff.compare import EpisodeDiff
from smoldata_tui.store.metadata import effective_status
from smoldata_tui.trace.finding_labels import infer_status


@dataclass(frozen=True, slots=True)
class SideFacts:
    path: str
    task: str | None
    status: str
    verdict: int | None  # native_tool_calls: what training gets (None: rejected or crash)
    verdict_text: str  # "native_tool_calls = 3", "None — ValueError: …", "wrapper would crash — …"
    grade: float | None  # env_reward, else correctness; None when ungraded or the grader failed
    grade_text: str | None  # "reward 1", "grader failed", … None without metadata
    calls: int
    tokens: int  # input + output + reasoning, summed over the steps
    duration_ms: float | None  # finished_at − started_at, else the trace's first to last timestamp


def side_facts(episode: EpisodeCalls) -> SideFacts:
    report, metadata = episode.report, episode.metadata
    stats = report.stats
    grade = metadata.grade if metadata is not None else None
    grade_value = None
    if grade is not None and not grade.grader_error:
        grade_value = grade.env_reward if grade.env_reward is not None else grade.correctness
    if metadata is not None and metadata.duration_s is not None:
        duration = metadata.duration_s * 1000
    else:
        duration = stats.wall_time_ms if stats.first_timestamp is not None else None
    tokens = stats.tokens
    # as the fleet row and the viewer say it: a running episode whose process is gone is interrupted
    status = effective_status(metadata) or infer_status(report.findings, ended=True)
    return SideFacts(
        path=str(episode.path),
        task=metadata.task if metadata is not None else None,
        status=status,
        verdict=report.verdict.native_tool_calls,
        verdict_text=report.verdict.badge(),
        grade=grade_value,
        grade_text=grade.badge() if grade is not None else None,
        calls=len(episode.calls),
        tokens=int(tokens.get("input", 0) + tokens.get("output", 0) + tokens.get("reasoning", 0)),
        duration_ms=duration,
    )


def _side_json(episode: EpisodeCalls) -> dict:
    facts = side_facts(episode)
    return {
        "path": facts.path,
        "task": facts.task,
        "verdict": facts.verdict,
        "grade": facts.grade,
        "calls": facts.calls,
        # Beyond the five fields: why the verdict is what it is, and the lines not compared.
        "verdict_reason": episode.report.verdict.reason,
        "skipped": [{"line": item.line, "reason": item.reason} for item in episode.skipped],
    }


def diff_json(diff: EpisodeDiff) -> dict:
    pairs = []
    for pair in diff.pairs:
        call_a, call_b = diff.call_a(pair), diff.call_b(pair)
        pairs.append(
            {
                "op": pair.op,
                "tool": (call_a or call_b).tool,
                "a_line": call_a.line if call_a else None,
                "b_line": call_b.line if call_b else None,
                "output_differs": pair.output_differs,
            }
        )
    first = diff.first_divergence
    divergence = None
    if first is not None:
        divergence = {"a_line": pairs[first]["a_line"], "b_line": pairs[first]["b_line"]}
    return {
        "a": _side_json(diff.a),
        "b": _side_json(diff.b),
        "pairs": pairs,
        "first_divergence": divergence,
        "exact": diff.exact,
    }
