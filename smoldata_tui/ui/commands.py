"""The command palette (Ctrl+P): every action of the screen, plus ready-made filters."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.fuzzy import FuzzySearch
from textual.markup import escape

from smoldata_tui.trace.text import clip
from smoldata_tui.ui.filtering import NO_FILTER, EventFilter


class EpisodeCommands(Provider):
    """Commands built from the same catalogue as the help screen, so both list every action."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        from smoldata_tui.ui.screens.catalogue import catalogue_for
        from smoldata_tui.ui.screens.episode import EpisodeScreen
        from smoldata_tui.ui.widgets.detail import DetailView
        from smoldata_tui.ui.widgets.findings_panel import FindingsList
        from smoldata_tui.ui.widgets.timeline import Timeline
        from smoldata_tui.ui.widgets.training_panel import TurnTable

        screen = self.screen
        if not isinstance(screen, EpisodeScreen):
            return []
        targets = {
            EpisodeScreen: screen,
            Timeline: screen.timeline,
            DetailView: screen.query_one(DetailView),
            FindingsList: screen.query_one(FindingsList),
            TurnTable: screen.query_one(TurnTable),
        }
        commands: list[tuple[str, str, Callable[[], object]]] = []
        seen: set[tuple[type, str]] = set()
        for entry in catalogue_for(screen):
            target = targets.get(entry.owner)
            if target is None or (entry.owner, entry.action) in seen or entry.action == "command_palette":
                continue
            seen.add((entry.owner, entry.action))
            run = partial(target.run_action, entry.action)
            commands.append((entry.description, f"{entry.context} · key {entry.keys}", run))
        presets: list[tuple[str, EventFilter]] = [
            ("Filter: only tool calls", EventFilter(kinds=frozenset({"tool_use"}))),
            ("Filter: only rows with findings", EventFilter(findings_only=True)),
            ("Filter: only rows with error findings", EventFilter(errors_only=True)),
            ("Filter: only failed or unfinished calls", EventFilter(statuses=frozenset({"error", "unfinished"}))),
            ("Filter: only text and reasoning", EventFilter(kinds=frozenset({"text", "reasoning"}))),
            ("Filter: show everything", NO_FILTER),
        ]
        for tool in sorted(screen.stats.calls_by_tool):
            presets.append((f"Filter: only {clip(tool, 30)} calls", EventFilter(tools=frozenset({tool}))))
        for title, event_filter in presets:
            commands.append((title, "hide the other rows", partial(screen.apply_filter, event_filter)))
        return commands

    # The palette parses a str prompt and every help text as markup, and Matcher.highlight
    # does too; titles can hold tool names from the trace, so prompts are rich Text objects
    # highlighted here and help texts are escaped.
    async def discover(self) -> Hits:
        for title, help_text, run in self._commands():
            yield DiscoveryHit(Text(title), run, text=title, help=escape(help_text))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        fuzzy = FuzzySearch(case_sensitive=False)
        for title, help_text, run in self._commands():
            score = matcher.match(title)
            if score > 0:
                prompt = Text(title)
                for offset in fuzzy.match(query, title)[1]:
                    prompt.stylize("reverse", offset, offset + 1)
                yield Hit(score, prompt, run, text=title, help=escape(help_text))
