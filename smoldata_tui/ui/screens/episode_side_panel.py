"""The episode screen's side panel: whether it shows, which tab is open, what the tabs say
(a mixin of EpisodeScreen; its handlers are named ``on_<message>`` for the reason
:mod:`episode_navigation` gives).
"""

from __future__ import annotations


from rich.text import Text
from textual.widgets import TabbedContent

from smoldata_tui.ui.widgets.conversation import ConversationView
from smoldata_tui.ui.widgets.findings_panel import FindingsList
from smoldata_tui.ui.widgets.stats_panel import StatsPanel


NARROW = 110  # below this many columns the side panel goes under the timeline
TABS = {"detail": "detail-tab", "findings": "findings-tab", "stats": "stats-tab", "episode": "episode-tab",
        "training": "training-tab", "conversation": "conversation-tab"}  # fmt: skip


class EpisodeSidePanel:  # mixed into EpisodeScreen, which is a Screen
    # --- showing the panel --------------------------------------------------------------------
    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")
        self._apply_panel()

    def _apply_panel(self) -> None:
        wanted = self.panel_wanted if self.panel_wanted is not None else self.size.width >= NARROW
        self.query_one("#side").display = wanted

    @property
    def panel_visible(self) -> bool:
        return bool(self.query_one("#side").display)

    # --- tabs ---------------------------------------------------------------------------------
    def show_tab(self, name: str) -> None:
        """Open the side panel on a tab (the detail tab shows the selected event)."""
        self.panel_wanted = True
        self._apply_panel()
        self.query_one(TabbedContent).active = TABS[name]
        if name == "detail":
            self.detail.show(self.timeline.cursor_event)

    def _label_tab(self, name: str, label: str) -> None:
        tab = self.query_one(TabbedContent).get_tab(TABS[name])
        if tab.label_text != label:
            tab.label = Text(label)

    @property
    def active_tab(self) -> str | None:
        active = self.query_one(TabbedContent).active
        return next((name for name, pane in TABS.items() if pane == active), None)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == TABS["stats"]:
            self.query_one(StatsPanel).set_stats(self.stats)
        reading = event.pane.id == TABS["conversation"]
        self.set_class(reading, "-conversation")  # a transcript wants more width than the detail
        if reading:
            self.conversation.shown()

    # --- panel, raw, tab keys -----------------------------------------------------------------
    def action_toggle_raw(self) -> None:
        self.detail.raw_mode = not self.detail.raw_mode
        self.show_tab("detail")

    def action_toggle_panel(self) -> None:
        self.panel_wanted = not self.panel_visible
        self._apply_panel()
        if self.panel_visible:
            self.detail.show(self.timeline.cursor_event)
        else:
            self.timeline.focus()

    def action_show_tab(self, name: str) -> None:
        self.show_tab(name)
        if name == "findings":  # 2: straight to the list, so j/k and Enter work on it
            self.query_one(FindingsList).focus()
        elif name == "conversation":  # c: j/k walk the messages and calls, the timeline follows
            self.query_one(ConversationView).focus()
