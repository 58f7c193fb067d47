"""The rows of the episode tab's Sandbox section: where the episode ran and what the sandbox got.
The metadata file is anyone's: values are kept as clipped text, for a renderer that never reads
them as markup."""

from __future__ import annotations

from smoldata_tui.trace.text import clip

# (key in run.meta.json's sandbox.resources, label, unit)
RESOURCES = (("cpu", "cpu", ""), ("memory_gib", "memory", " GiB"), ("disk_gib", "disk", " GiB"),
             ("target", "target", ""), ("snapshot", "snapshot", ""), ("image", "image", ""))  # fmt: skip


def sandbox_rows(sandbox: object) -> list[tuple[str, str]]:
    """(label, value) for the sandbox's id, name and source, then what a remote one got (cpu,
    memory, disk, target, snapshot or image, as Daytona reported them at creation)."""
    if not isinstance(sandbox, dict):
        return []
    rows = [(name, sandbox[name]) for name in ("id", "name", "source") if sandbox.get(name) not in (None, "")]
    got = sandbox.get("resources")
    if isinstance(got, dict):
        rows += [(label, f"{got[key]}{unit}") for key, label, unit in RESOURCES if got.get(key) not in (None, "")]
    return [(label, clip(str(value), 200)) for label, value in rows]
