"""Every finding of the trace, one row each (virtualised), Enter jumps to its line."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from smoldata_tui.trace import Finding, Severity
from smoldata_tui.trace.text import neutralize
from smoldata_tui.ui.theme_text import ThemedStatic
from smoldata_tui.ui.widgets.styles import StyleCache, set_virtual_size

MARK = {Severity.ERROR: "\u2717", Severity.WARNING: "!", Severity.INFO: "\u00b7"}


def severity_counts_text(findings: list[Finding]) -> Text:
    counts = {severity: 0 for severity in Severity}
    for finding in findings:
        counts[finding.severity] += 1
    text = Text(no_wrap=True)
    text.append(f"{len(findings):,} finding{'s' if len(findings) != 1 else ''}  ")
    text.append(f"\u2717 {counts[Severity.ERROR]} error  ", "bold $error" if counts[Severity.ERROR] else "dim")
    text.append(f"! {counts[Severity.WARNING]} warning  ", "$warning" if counts[Severity.WARNING] else "dim")
    text.append(f"\u00b7 {counts[Severity.INFO]} info", "dim")
    return text


def finding_message(finding: Finding) -> Text:
    where = f"line {finding.line}" if finding.line else "whole stream"
    related = f"  (see line {finding.related_line})" if finding.related_line else ""
    text = Text()
    text.append(f"{MARK[finding.severity]} {finding.kind}", _STYLE[finding.severity])
    text.append(f"  {where}{related}\n", "dim")
    text.append(neutralize(finding.message))
    return text


_STYLE = {Severity.ERROR: "bold $error", Severity.WARNING: "$warning", Severity.INFO: "dim"}


class FindingsList(ScrollView, can_focus=True, inherit_bindings=False):
    BINDINGS = [
        Binding("down,j", "move(1)", "Next finding", show=False),
        Binding("up,k", "move(-1)", "Previous finding", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("home,g", "move_to(0)", "First finding", show=False),
        Binding("end,G", "move_to(-1)", "Last finding", show=False),
        Binding("enter", "jump", "Jump to its line"),
    ]
    COMPONENT_CLASSES = {"findings--cursor", "findings--error", "findings--warning", "findings--info", "findings--dim"}
    DEFAULT_CSS = """
    FindingsList { overflow-x: hidden; overflow-y: scroll; }
    FindingsList > .findings--cursor { background: $block-cursor-blurred-background; color: $block-cursor-blurred-foreground; }
    FindingsList:focus > .findings--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    FindingsList > .findings--error { color: $text-error; text-style: bold; }
    FindingsList > .findings--warning { color: $text-warning; }
    FindingsList > .findings--info { color: $text-muted; }
    FindingsList > .findings--dim { color: $text-muted; }
    """

    cursor: reactive[int] = reactive(0, repaint=False, init=False)

    class Highlighted(Message):
        def __init__(self, finding: Finding | None) -> None:
            super().__init__()
            self.finding = finding

    class JumpRequested(Message):
        def __init__(self, finding: Finding) -> None:
            super().__init__()
            self.finding = finding

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.findings: list[Finding] = []
        self.count = 0
        self._style_cache = StyleCache(self)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache.clear()

    def set_findings(self, findings: list[Finding], count: int) -> None:
        """Show ``findings[:count]`` (the engine's list only grows, so this is cheap)."""
        self.findings = findings
        self.count = count
        set_virtual_size(self, Size(self.scrollable_content_region.width, count))
        if self.cursor >= count:
            self.cursor = max(0, count - 1)
        self.refresh()

    @property
    def current(self) -> Finding | None:
        return self.findings[self.cursor] if 0 <= self.cursor < self.count else None

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if row >= self.count:
            return Strip.blank(width, self._style_cache.base)
        finding = self.findings[row]
        severity_style = self._style_cache.get(f"findings--{finding.severity.value}")
        text = Text(no_wrap=True, end="", style=self._style_cache.base)
        text.append(f"{MARK[finding.severity]} ", severity_style)
        text.append(f"{'L' + str(finding.line) if finding.line else '—':>6} ", self._style_cache.get("findings--dim"))
        text.append(f"{finding.kind:<21} ", severity_style)
        text.append(neutralize(finding.message[: width * 2], keep_newlines=False))
        text.truncate(width, overflow="ellipsis", pad=True)
        if row == self.cursor:
            text.stylize(self._style_cache.get("findings--cursor"))
        return Strip(text.render(self.app.console), width)

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_line(old)
        self.refresh_line(new)
        self.scroll_to_region(Region(0, new, 1, 1), animate=False, force=True, immediate=True)
        self.post_message(self.Highlighted(self.current))

    def action_move(self, delta: int) -> None:
        if self.count:
            self.cursor = max(0, min(self.count - 1, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.scrollable_content_region.height - 1))

    def action_move_to(self, row: int) -> None:
        if self.count:
            self.cursor = row if row >= 0 else self.count - 1

    def action_jump(self) -> None:
        if self.current is not None:
            self.post_message(self.JumpRequested(self.current))

    def on_click(self, event) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        row = self.scroll_offset.y + offset.y
        if row < self.count:
            self.cursor = row
            if event.chain >= 2:
                self.action_jump()


class FindingsPanel(Vertical):
    DEFAULT_CSS = """
    FindingsPanel { height: 1fr; }
    FindingsPanel > #findings-counts { height: 1; padding: 0 1; }
    FindingsPanel > FindingsList { height: 1fr; }
    FindingsPanel > #findings-message { height: auto; max-height: 8; padding: 0 1; border-top: solid $foreground 20%; }
    """

    def compose(self) -> ComposeResult:
        yield ThemedStatic(id="findings-counts")
        yield FindingsList(id="findings-list")
        yield ThemedStatic(Text("No findings yet.", "dim"), id="findings-message")

    def set_findings(self, findings: list[Finding], count: int) -> None:
        shown = findings[:count]
        self.query_one("#findings-counts", Static).update(severity_counts_text(shown))
        listing = self.query_one(FindingsList)
        listing.set_findings(findings, count)
        self._show(listing.current)

    @on(FindingsList.Highlighted)
    def _highlighted(self, message: FindingsList.Highlighted) -> None:
        self._show(message.finding)

    def _show(self, finding: Finding | None) -> None:
        text = finding_message(finding) if finding is not None else Text("No findings: nothing to report.", "dim")
        self.query_one("#findings-message", Static).update(text)
