"""Names a package loads when first asked for (PEP 562): a module that needs one submodule does
not pay for importing the whole package. ``check`` answering from its cache is mostly start-up."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_getattr(package: str, homes: dict[str, str], namespace: dict) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: a name of ``homes`` is imported from the submodule
    ``homes[name]`` on first use, and kept in ``namespace`` (the package's globals)."""

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return __getattr__
