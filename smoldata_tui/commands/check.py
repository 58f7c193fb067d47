"""``smoldata-tui check``: the training wrapper's verdict and the findings, for CI and humans.

The checking itself is ``fleet/check.py`` (on every CPU; with ``--json`` its results are cached
between runs, as linters keep theirs, and ``--no-cache`` reads every trace). This is the verb: the
results as JSON Lines or as a table (``check_table.py``), ``--summary``, ``--groups``
(``check_groups.py``), and the exit status.
"""

from __future__ import annotations

import gc
import sys
from typing import TextIO

import orjson

from smoldata_tui.fleet.check import Checked, UsageError, check_all, lasting_objects, list_traces

# The totals and the printers are imported where they are used: a re-run that the cache answers
# whole analyses nothing, and its start-up is most of its time.

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


def exit_status(results: list[Checked], *, strict: bool) -> int:
    if any(result.error for result in results):
        return EXIT_USAGE
    for result in results:
        if not result.accepted or (strict and result.has_errors()):
            return EXIT_REJECTED
    return EXIT_OK


def run_check(
    paths: list[str],
    *,
    as_json: bool,
    strict: bool,
    summary: bool = False,
    groups: bool = False,
    out: TextIO | None = None,
    use_cache: bool = True,
) -> int:
    out = out or sys.stdout
    missing: list[str] = []
    try:
        with lasting_objects():
            traces = list_traces(paths, use_cache=use_cache and as_json, missing=missing)
    except UsageError as exc:
        print(f"smoldata-tui check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not traces:
        _say_missing(missing)
        return EXIT_USAGE
    binary = getattr(out, "buffer", None)
    results: list[Checked] = []
    for result in check_all(traces, as_json=as_json, with_metadata=summary or groups, use_cache=use_cache):
        if as_json:
            if binary is not None:
                binary.write(result.line)
            else:
                out.write(result.line.decode())
            result.line = None  # written: do not keep every line until the end
        results.append(result)
    for result in results:
        if result.error is not None:
            print(f"smoldata-tui check: {result.path}: {result.error}", file=sys.stderr)
    _say_missing(missing)
    if summary:
        from smoldata_tui.fleet.aggregate import fleet_totals
    found_groups = _groups(results) if groups else None
    if as_json:
        last_lines = []
        if summary:
            totals = fleet_totals(result.summary for result in results).to_json()
            if missing:
                totals["missing"] = missing
            last_lines.append(orjson.dumps(totals) + b"\n")
        if found_groups is not None:
            from smoldata_tui.commands.check_groups import groups_line

            last_lines.append(groups_line(found_groups))
        for line in last_lines:
            if binary is not None:
                binary.write(line)
            else:
                out.write(line.decode())
        out.flush()
    else:
        from smoldata_tui.commands.check_table import print_summary, print_table

        if summary:
            print_summary(fleet_totals(result.summary for result in results), results, out=out, strict=strict,
                          missing=missing)  # fmt: skip
        elif found_groups is None:
            print_table(results, out=out, strict=strict, missing=missing)
        if found_groups is not None:
            from smoldata_tui.commands.check_groups import print_groups

            print_groups(found_groups, out=out)
    gc.unfreeze()  # what lasting_objects froze lived as long as this command
    return EXIT_USAGE if missing else exit_status(results, strict=strict)


def _say_missing(missing: list[str]) -> None:
    for path in missing:
        print(f"smoldata-tui check: {path}: no such file or directory", file=sys.stderr)


def _groups(results: list[Checked]):
    """The fleet's groups (``fleet/groups.py``) with their first splits: unreadable traces have no
    task or model, and make no group."""
    from smoldata_tui.fleet.groups import add_first_splits, group_episodes

    found = group_episodes([result.summary for result in results if result.error is None])
    add_first_splits(found)
    return found
