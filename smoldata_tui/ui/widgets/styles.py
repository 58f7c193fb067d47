"""Helpers shared by the line-based widgets: styles that follow the theme, cheap resizing.

Rich styles from component classes, with translucent backgrounds blended in:

``get_component_rich_style(partial=True)`` keeps only the rules a class sets (so a span's own
colour survives) but drops the alpha of a background (``$error 20%`` would come out as solid
red), and works an ``auto`` colour out against no background. This takes the text style from the
partial style and the colours it sets from the full one.
"""

from __future__ import annotations

from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.widget import Widget


def component_style(widget: Widget, name: str) -> Style:
    partial = widget.get_component_rich_style(name, partial=True)
    if partial.bgcolor is None and partial.color is None:
        return partial
    # The colours come from the full style: a translucent background is blended there, and an
    # ``auto`` colour ($text-muted is "auto 60%") is worked out against the real background; in
    # the partial style it is worked out against none, which gave white text on light themes.
    full = widget.get_component_rich_style(name)
    return partial + Style(
        color=full.color if partial.color is not None else None,
        bgcolor=full.bgcolor if partial.bgcolor is not None else None,
    )


class StyleCache:
    """The widget's base style and its component styles, computed once per theme/CSS change.

    ``Widget.rich_style`` walks the ancestors on every call: per rendered row that adds up.
    Owners call :meth:`clear` from ``notify_style_update``.
    """

    def __init__(self, widget: Widget) -> None:
        self.widget = widget
        self._base: Style | None = None
        self._components: dict[str, Style] = {}

    @property
    def base(self) -> Style:
        if self._base is None:
            self._base = self.widget.rich_style
        return self._base

    def get(self, name: str) -> Style:
        style = self._components.get(name)
        if style is None:
            style = self._components[name] = component_style(self.widget, name)
        return style

    def clear(self) -> None:
        self._base = None
        self._components.clear()


def set_virtual_size(view: ScrollView, size: Size) -> None:
    """Change what a ScrollView scrolls over without a screen-wide layout pass.

    ``virtual_size`` is a layout reactive: assigning it re-lays out and redraws the whole
    screen (some 40 ms on a small machine), and a followed trace grows ten times a second.
    For a view whose own size does not depend on its content and whose vertical scrollbar is
    always shown (``overflow-y: scroll``), only the scrollbar and the view need updating,
    which is what Textual's OptionList does through ``_scroll_update``.
    """
    if size == view.virtual_size:
        return
    if not hasattr(view, "_scroll_update"):  # a Textual without the private hook: the slow way
        view.virtual_size = size
        return
    view.set_reactive(ScrollView.virtual_size, size)
    view._scroll_update(size)
    view.refresh()
