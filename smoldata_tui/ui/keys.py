"""Every key of the app, read from the widgets' own ``BINDINGS`` (so help cannot go stale)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

_NAMES = {
    "up": "\u2191",
    "down": "\u2193",
    "left": "\u2190",
    "right": "\u2192",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "enter": "Enter",
    "escape": "Esc",
    "space": "Space",
    "tab": "Tab",
    "slash": "/",
    "question_mark": "?",
    "full_stop": ".",
    "comma": ",",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "greater_than_sign": ">",
    "less_than_sign": "<",
    "plus": "+",
    "minus": "-",
}


def key_display(key: str) -> str:
    """``ctrl+f`` → ``Ctrl+F``, ``pagedown`` → ``PgDn``, ``question_mark`` → ``?``."""
    parts = key.split("+")
    *modifiers, name = parts
    shown = _NAMES.get(name, name.upper() if len(name) > 1 and not modifiers else name)
    if modifiers:
        shown = (
            "+".join(modifier.capitalize() for modifier in modifiers)
            + "+"
            + (shown.upper() if len(shown) == 1 else shown)
        )
    return shown


@dataclass(frozen=True)
class KeyHelp:
    context: str
    keys: str  # as shown: "↓ j"
    description: str
    action: str
    owner: type


def bindings_of(owner: type) -> list[Binding]:
    """The class's own BINDINGS as Binding objects (keys not yet split)."""
    result = []
    for binding in owner.__dict__.get("BINDINGS", []):
        result.append(binding if isinstance(binding, Binding) else Binding(*binding))
    return result


def key_catalogue(groups: list[tuple[str, type]]) -> list[KeyHelp]:
    catalogue = []
    for context, owner in groups:
        for binding in bindings_of(owner):
            keys = " ".join(key_display(key.strip()) for key in binding.key.split(","))
            catalogue.append(KeyHelp(context, keys, binding.description or binding.action, binding.action, owner))
    return catalogue
