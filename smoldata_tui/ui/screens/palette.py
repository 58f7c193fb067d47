"""The command palette (Ctrl+P): every action of the screen, plus what the screen adds."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.fuzzy import FuzzySearch
from textual.markup import escape

from smoldata_tui.ui.screens.catalogue import catalogue_for


class ScreenCommands(Provider):
    """Ctrl+P: the commands of the help's catalogue, runnable, plus the screen's own extras (ready-made
    filters, sorts). A screen takes part by saying which object runs each catalogue owner's actions
    (``palette_targets``) and, optionally, what else it offers (``palette_extras``)."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        screen = self.screen
        targets_of = getattr(screen, "palette_targets", None)
        if targets_of is None:
            return []
        targets = targets_of()
        commands: list[tuple[str, str, Callable[[], object]]] = []
        seen: set[tuple[type, str]] = set()
        for entry in catalogue_for(screen):
            target = targets.get(entry.owner)
            if target is None or (entry.owner, entry.action) in seen or entry.action == "command_palette":
                continue
            seen.add((entry.owner, entry.action))
            run = partial(target.run_action, entry.action)
            commands.append((entry.description, f"{entry.context} · key {entry.keys}", run))
        extras = getattr(screen, "palette_extras", None)
        return commands + (extras() if extras is not None else [])

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
