"""Tokens, cost, calls per tool, step durations and where the time went."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Sparkline, Static

from smoldata_tui.trace import Stats
from smoldata_tui.trace.number_format import format_count, format_duration
from smoldata_tui.trace.text import clip
from smoldata_tui.ui.theme_text import ThemedStatic

BAR = "\u2588"
BAR_WIDTH = 24


def _bar(value: float, largest: float, width: int = BAR_WIDTH) -> str:
    if largest <= 0:
        return ""
    cells = value / largest * width
    return BAR * int(cells) + ("\u258c" if cells - int(cells) >= 0.5 else "")


def _short(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    return format_count(value)


def stats_text(stats: Stats) -> Text:
    text = Text()
    label = "bold"
    text.append("Events    ", label)
    text.append(f"{stats.events:,}  ")
    text.append(" · ".join(f"{clip(kind, 20)} {count:,}" for kind, count in stats.events_by_type.most_common()), "dim")
    text.append("\nSteps     ", label)
    text.append(f"{stats.steps:,} started, {stats.steps_finished:,} finished")
    text.append("\nTokens    ", label)
    tokens = stats.tokens
    text.append(
        f"in {_short(tokens.get('input', 0))} · out {_short(tokens.get('output', 0))} · "
        f"reasoning {_short(tokens.get('reasoning', 0))} · cache read {_short(tokens.get('cache_read', 0))} · "
        f"write {_short(tokens.get('cache_write', 0))}"
    )
    text.append("\nCost      ", label)
    text.append(f"${stats.cost:.4f}")

    text.append("\n\nTime      ", label)
    wall, model, tool = stats.wall_time_ms, stats.model_time_ms, stats.tool_time_ms
    text.append(f"wall {format_duration(wall) or '0ms'}")
    busy = model + tool
    if busy > 0:
        text.append(f" · model {format_duration(model)} ({model / busy:.0%})")
        text.append(f" · tools {format_duration(tool)} ({tool / busy:.0%})")
        model_cells = round(model / busy * BAR_WIDTH * 1.5)
        text.append("\n          ")
        text.append(BAR * model_cells, "$secondary")
        text.append(BAR * (round(BAR_WIDTH * 1.5) - model_cells), "$accent")
        text.append("  model ", "$secondary")
        text.append("tools", "$accent")

    text.append("\n\nCalls     ", label)
    text.append(f"{stats.calls:,}  ")
    text.append(
        " · ".join(f"{clip(status, 20)} {count:,}" for status, count in stats.calls_by_status.most_common()), "dim"
    )
    if stats.calls_by_tool:
        largest = max(stats.calls_by_tool.values())
        for tool_name, count in stats.calls_by_tool.most_common(12):
            text.append(f"\n  {clip(tool_name, 12):<12} ")
            text.append(_bar(count, largest), "$accent")
            text.append(f" {count:,}")
        others = len(stats.calls_by_tool) - 12
        if others > 0:
            text.append(f"\n  … and {others} more tools", "dim")
    durations = sorted(stats.call_durations_ms)
    if durations:
        text.append("\n  call time ", "dim")
        text.append(
            f"median {format_duration(durations[len(durations) // 2])} · max {format_duration(durations[-1])}", "dim"
        )

    steps = stats.step_durations_ms
    text.append("\n\nStep durations", label)
    if steps:
        ordered = sorted(steps)
        text.append(
            f"  {len(steps):,} steps · median {format_duration(ordered[len(ordered) // 2])} · "
            f"max {format_duration(ordered[-1])} · total {format_duration(sum(steps))}",
            "dim",
        )
    else:
        text.append("  (no finished step yet)", "dim")
    return text


class StatsPanel(VerticalScroll):
    DEFAULT_CSS = """
    StatsPanel { padding: 0 1; }
    StatsPanel > #stats-text { height: auto; }
    StatsPanel > Sparkline { height: 3; margin: 1 0 0 0; }
    StatsPanel > #stats-axis { height: 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield ThemedStatic(Text("No events yet.", "dim"), id="stats-text")
        yield Sparkline([], id="step-sparkline")
        yield ThemedStatic(id="stats-axis")

    def set_stats(self, stats: Stats) -> None:
        self.query_one("#stats-text", Static).update(stats_text(stats))
        steps = stats.step_durations_ms
        self.query_one(Sparkline).data = list(steps) if steps else []
        axis = (
            Text("step 1 \u2192 step " + format(len(steps), ",") + "   (bar height: step duration)", "dim")
            if steps
            else Text()
        )
        self.query_one("#stats-axis", Static).update(axis)
