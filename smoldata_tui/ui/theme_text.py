"""Colours from the current theme for text built in Python (never ANSI names like "red").

Rich ``Text`` built by the screens names theme variables in its span styles (``"bold $error"``,
``"$text-muted"``, ``"$success-badge"``: the theme's background on its success colour). Three
ways to draw it, one rule for the names:

- :func:`themed_content` for a ``Static``: Textual resolves the names at render time, so a
  theme change recolours it without rebuilding the text;
- :func:`themed` for a widget's ``render`` that must return Rich ``Text`` (resolved now);
- :func:`rich_theme` for renderables turned into strips by a Rich console (the conversation's
  markdown, diffs and checklists): named ``conv.*`` and ``markdown.*`` styles in theme colours.
"""

from __future__ import annotations

from rich.style import Style
from rich.color import Color as RichColor
from rich.text import Text
from rich.theme import Theme
from textual.color import Color
from textual.content import Content, Span
from textual.style import Style as ContentStyle
from textual.widgets import Static


# Colours with a ``text-`` variant: text in $error is drawn in $text-error, made to be read on the
# theme's background (darker on light themes), as resolve_style does.
_TEXT_VARIANTS = frozenset({"$error", "$success", "$warning", "$accent", "$primary", "$secondary"})


def _undimmed(words: list[str]) -> list[str]:
    """Rich's ``dim`` fades the text a third of the way into whatever is behind it (2:1 on most light
    themes): it means the theme's muted text colour, which is made to read (:func:`readable_variables`)."""
    if "dim" not in words or any(word.startswith("$") or word == "on" for word in words):
        return words
    return ["$text-muted" if word == "dim" else word for word in words]


def _badge(style: str) -> str:
    """``$success-badge`` → the theme's background on its success colour; ``$error`` → ``$text-error``;
    ``dim`` → ``$text-muted``."""
    words: list[str] = []
    for word in _undimmed(style.split()):
        if word.startswith("$") and word.endswith("-badge"):
            words += ["auto 90%", "on", word[:-6]]  # the text colour Textual picks to read on it
        elif word in _TEXT_VARIANTS and (not words or words[-1] != "on"):
            words.append("$text-" + word[1:])
        else:
            words.append(word)
    return " ".join(words)


def themed_content(text: Text) -> Content:
    """Rich ``Text`` whose styles may name theme variables, as Textual ``Content`` (plain text, no markup)."""
    spans = [
        Span(start, end, _badge(style) if isinstance(style, str) else ContentStyle.from_rich_style(style))
        for start, end, style in text.spans
    ]
    content = Content(text.plain, spans)
    if text.style:
        style = text.style
        content = content.stylize_before(_badge(style) if isinstance(style, str) else ContentStyle.from_rich_style(style))
    return content


def _auto(value: str, background: Color) -> Color:
    """An ``auto N%`` colour as Textual draws it on ``background``: black or white, N% over it."""
    words = value.split()
    alpha = float(words[1].rstrip("%")) / 100 if len(words) > 1 else 1.0
    return background.blend(background.get_contrast_text(1.0), alpha)


def _colour(variables: dict[str, str], name: str):
    value = variables.get(name, "")
    try:
        if value.startswith("auto"):  # "auto 60%" ($text-muted), worked out on the theme's background
            return _auto(value, Color.parse(variables["background"])).rich_color
        return Color.parse(value).rich_color
    except Exception:  # noqa: BLE001 - a theme without it: the terminal's default colour
        return None


def _luminance(colour) -> float:
    def channel(value: int) -> float:
        value /= 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue = colour.get_truecolor()
    return 0.2126 * channel(red) + 0.7152 * channel(green) + 0.0722 * channel(blue)


def contrast(first, second) -> float:
    """WCAG's contrast ratio of two Rich colours (1 to 21)."""
    high, low = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _readable_on(background, variables: dict[str, str]):
    """The theme's background or foreground, whichever reads better on ``background`` (a badge's colour)."""
    if background is None:
        return _colour(variables, "background")
    theme = [colour for colour in (_colour(variables, "background"), _colour(variables, "foreground")) if colour is not None]
    best = max(theme, key=lambda colour: contrast(colour, background), default=None)
    if best is None or contrast(best, background) < 4.5:  # a mid-tone badge: black or white reads better
        best = max((RichColor.from_rgb(0, 0, 0), RichColor.from_rgb(255, 255, 255), *theme),
                   key=lambda colour: contrast(colour, background))  # fmt: skip
    return best


def readable(style: Style, minimum: float = 4.5) -> Style:
    """``style`` with its text colour changed to black or white when it reads below ``minimum``
    on its own background (a theme's cursor colours do not always: gruvbox's is 2.4:1)."""
    if style.bgcolor is None or style.color is None or contrast(style.color, style.bgcolor) >= minimum:
        return style
    better = max((RichColor.from_rgb(0, 0, 0), RichColor.from_rgb(255, 255, 255)),
                 key=lambda colour: contrast(colour, style.bgcolor))  # fmt: skip
    return style + Style(color=better)


# WCAG's 4.5:1 for text, with room for Textual's 5% tints (a focused table's header, a focused
# button) and the rounding of blended colours to whole RGB values.
READABLE = 4.8

# Where the app's text sits: the screen, widgets' surface and panels (headers, tabs).
_SURFACES = ("background", "surface", "panel")
# The theme's text colours, each with the backgrounds it is drawn on.
_TEXT_ON = {
    **{name: _SURFACES for name in ("foreground", "button-foreground", "text-primary", "text-secondary",
                                    "text-accent", "text-warning", "text-error", "text-success")},  # fmt: skip
    "button-color-foreground": ("primary", "error"),  # our buttons' variants: Run, and the live screen's stop
    **{name: ("footer-background",) for name in ("footer-foreground", "footer-description-foreground",
                                                 "footer-key-foreground")},  # fmt: skip
    "block-cursor-foreground": ("block-cursor-background",),
    "block-cursor-blurred-foreground": ("block-cursor-blurred-background",),
}


_SURFACES_TEXT = frozenset(name for name, on in _TEXT_ON.items() if on == _SURFACES)


def _solid(value: str, under: Color) -> Color | None:
    """A theme colour as drawn over ``under`` (a translucent one blended), or None if the terminal picks it."""
    try:
        colour = Color.parse(value)
    except Exception:  # noqa: BLE001 - "auto", "transparent", a name Textual resolves elsewhere
        return None
    return None if colour.ansi is not None else under + colour


def _nudged(colour: Color, backgrounds: list[Color]) -> Color:
    """``colour``, or the least blend of it towards black or white that reads on every background."""
    def worst(candidate: Color) -> float:
        return min(contrast(candidate.rich_color, background.rich_color) for background in backgrounds)

    if worst(colour) >= READABLE:
        return colour
    dark = sum(background.brightness for background in backgrounds) / len(backgrounds) < 0.5
    target = Color(255, 255, 255) if dark else Color(0, 0, 0)
    steps = [colour.blend(target, step / 20) for step in range(1, 21)]
    readable_steps = [candidate for candidate in steps if worst(candidate) >= READABLE]
    if readable_steps:
        return readable_steps[0]
    return max((Color(0, 0, 0), Color(255, 255, 255)), key=worst)  # a mid-tone background


def _muted(value: str, backgrounds: list[Color], screen: Color) -> str:
    """``$text-muted`` ("auto 60%") with its share raised until it reads on every background, worked out
    on that background (Textual's CSS) and on the screen's (:func:`themed`)."""
    if not value.startswith("auto"):
        return value
    words = value.split()
    percent = int(float(words[1].rstrip("%"))) if len(words) > 1 else 100
    for share in range(percent, 101, 2):
        candidate = f"auto {share}%"
        if all(contrast(_auto(candidate, on).rich_color, background.rich_color) >= READABLE
               for background in backgrounds for on in (background, screen)):  # fmt: skip
            return candidate
    return "auto 100%"


def readable_variables(variables: dict[str, str]) -> dict[str, str]:
    """The theme's variables with every text colour (and ``$text-muted``) made to read at 4.5:1 on
    the backgrounds it is drawn on: a theme's own choice is kept wherever it already does, and
    otherwise moved the least towards black or white that does (solarized's foreground reads 4.1:1
    on its surface, most themes' accent-coloured footer keys 2:1 on the footer). ANSI themes are
    left alone: the terminal picks their colours."""
    screen = _solid(variables.get("background", ""), Color(0, 0, 0))
    if screen is None:
        return variables
    result = dict(variables)
    surfaces = [surface for surface in (_solid(variables.get(name, ""), screen) for name in _SURFACES) if surface]
    for name, on in _TEXT_ON.items():
        # a translucent background (the unfocused cursor's) as it looks over each surface
        backgrounds = [_solid(variables.get(background, ""), under) for background in on for under in surfaces]
        value = variables.get(name, "")
        if value.startswith("auto") and name not in _SURFACES_TEXT and backgrounds[0] is not None:
            value = _auto(value, backgrounds[0]).hex  # "auto 87%" on a cursor or a button: one colour there
        colour = _solid(value, screen)
        if colour is not None and None not in backgrounds:
            result[name] = _nudged(colour, backgrounds).hex
    result["text-muted"] = _muted(variables.get("text-muted", ""), surfaces, screen)
    return result


class ReadableTheme:
    """Mixed into every app: the CSS and :func:`themed` get :func:`readable_variables`."""

    def get_css_variables(self) -> dict[str, str]:
        variables = readable_variables(super().get_css_variables())  # type: ignore[misc]
        self.theme_variables = variables
        return variables


def resolve_style(style: object, variables: dict[str, str]) -> object:
    """One span style with ``$name`` words resolved against ``variables`` (``$error`` prefers ``text-error``)."""
    if not isinstance(style, str) or ("$" not in style and "dim" not in style):
        return style
    result = Style()
    for word in _undimmed(style.split()):
        if word.startswith("$") and word.endswith("-badge"):
            badge = _colour(variables, word[1:-6])
            result += Style(color=_readable_on(badge, variables), bgcolor=badge)
        elif word.startswith("$"):
            name = f"text-{word[1:]}" if f"text-{word[1:]}" in variables else word[1:]
            result += Style(color=_colour(variables, name))
        else:
            result += Style.parse(word)
    return result


def themed(text: Text, variables: dict[str, str]) -> Text:
    """Resolve ``$name`` colours in the text's and its spans' styles from the current theme (light and
    ANSI ones too)."""
    text.style = resolve_style(text.style, variables)
    text.spans = [span._replace(style=resolve_style(span.style, variables)) for span in text.spans]
    return text


# The conversation's named styles, as theme variables (resolved by rich_theme).
CONVERSATION_STYLES = {
    "conv.heading": "bold $accent",
    "conv.step": "bold $text-muted",
    "conv.muted": "$text-muted",
    "conv.code": "$secondary",
    "conv.error": "$error",
    "conv.warning": "$warning",
    "conv.success": "$success",
    "conv.add": "$success",
    "conv.remove": "$error",
    "conv.hunk": "$accent",
    "conv.fold": "italic $warning",
    "conv.reasoning": "italic $text-muted",
    "conv.tool": "bold $accent",
    "conv.selected": "bold $primary",
    "markdown.code": "bold $accent",
    "markdown.code_block": "$secondary",
    "markdown.block_quote": "italic $text-muted",
    "markdown.list": "$accent",
    "markdown.item.number": "$accent",
    "markdown.h2": "underline bold $accent",
    "markdown.h3": "bold $accent",
    "markdown.h4": "italic bold",
    "markdown.link": "underline $accent",
    "markdown.link_url": "underline $accent",
    "markdown.table.border": "$text-muted",
    "markdown.table.header": "bold",
    "markdown.kbd": "bold $warning",
}


def rich_theme(variables: dict[str, str]) -> Theme:
    """A Rich theme whose ``conv.*`` and ``markdown.*`` styles are this Textual theme's colours."""
    styles = {name: resolve_style(style, variables) for name, style in CONVERSATION_STYLES.items()}
    return Theme(styles, inherit=True)


class ThemedStatic(Static):
    """A ``Static`` that draws Rich ``Text`` naming theme variables in the theme's colours (never markup)."""

    def __init__(self, content: object = "", **kwargs) -> None:
        super().__init__(themed_content(content) if isinstance(content, Text) else content, **kwargs)

    def update(self, content: object = "", **kwargs) -> None:
        super().update(themed_content(content) if isinstance(content, Text) else content, **kwargs)
