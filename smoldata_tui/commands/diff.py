"""``smoldata-tui diff A B``: where two episodes part ways (the screen; text where there is no
terminal to draw on: a pipe, a file, a CI log; or ``--json``)."""

from __future__ import annotations

import sys
from typing import TextIO

import orjson

EXIT_SAME, EXIT_DIFFERENT, EXIT_USAGE = 0, 1, 2


def run_diff(a: str, b: str, *, as_json: bool, out: TextIO | None = None) -> int:
    """0 when every call is ``same``, 1 when they differ, 2 when a path cannot be used."""
    from smoldata_tui.diff import DiffInputError, diff_json, diff_paths

    out = out or sys.stdout
    if not as_json and out.isatty():
        from smoldata_tui.ui.exit_status import has_terminal  # Textual is loaded only for the screen

        if has_terminal():
            return _run_screen(a, b)
    try:
        # the text says what the screen's header and rows say: findings, stats and each call's summary
        diff = diff_paths(a, b, parallel=True, verdict_only=as_json, summaries=not as_json)
    except DiffInputError as exc:
        print(f"smoldata-tui diff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for label, side in (("A", diff.a), ("B", diff.b)):
        if side.export:
            print(f"smoldata-tui diff: {label} {side.path}: {side.export}: its calls are compared as converted (line "
                  "numbers are the conversion's); the verdict is the wrapper's rule on the file itself",
                  file=sys.stderr)  # fmt: skip
        if side.skipped:
            lines = ", ".join(str(item.line) for item in side.skipped[:10])
            more = "…" if len(side.skipped) > 10 else ""
            print(f"smoldata-tui diff: {label} {side.path}: {len(side.skipped)} line(s) not compared "
                  f"(not a usable event): {lines}{more}", file=sys.stderr)  # fmt: skip
    if not diff.exact:
        print("smoldata-tui diff: the episodes differ too much for an exact alignment in the time allowed; "
              "calls were matched on the inputs unique to both", file=sys.stderr)  # fmt: skip
    if as_json:
        out.write(orjson.dumps(diff_json(diff)).decode() + "\n")
    else:
        from smoldata_tui.diff.text_report import diff_text

        out.write("\n".join(diff_text(diff)) + "\n")
    out.flush()
    return EXIT_SAME if diff.identical else EXIT_DIFFERENT


def _run_screen(a: str, b: str) -> int:
    from smoldata_tui.diff import DiffInputError
    from smoldata_tui.diff.calls import resolve_trace

    try:
        resolve_trace(a)
        resolve_trace(b)
    except DiffInputError as exc:
        print(f"smoldata-tui diff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from smoldata_tui.ui.apps.diff import DiffApp

    app = DiffApp(a, b)
    app.run()
    return app.outcome
