"""Two episodes aligned call by call: where did they part ways? Pure Python, no Textual.

``load_episode(path)`` reads one side (a trace, or an episode folder holding ``run.jsonl``),
``diff_calls(a, b)`` aligns them, ``diff_json(diff)`` is what ``smoldata-tui diff --json`` prints.
"""

import functools

from smoldata_tui.diff.calls import Call, DiffInputError, EpisodeCalls, SkippedLine, load_episode
from smoldata_tui.diff.compare import CHANGED, ONLY_A, ONLY_B, SAME, EpisodeDiff, Pair, diff_calls
from smoldata_tui.diff.report import SideFacts, diff_json, side_facts


PARALLEL_MIN_BYTES = 4 << 20  # below this a second process costs more than it saves


def diff_paths(
    a: str, b: str, *, parallel: bool = False, verdict_only: bool = False, summaries: bool = True
) -> EpisodeDiff:
    """Load both sides and align them (raises DiffInputError for a path it cannot use).

    ``parallel``: read B in a forked process while A is read here, when both are big. Only for a
    caller without threads (the CLI): forking a threaded process is unsafe. ``verdict_only``: each
    side's report holds its verdict and skipped lines, not findings and stats (what ``--json``
    prints needs no more, and reading is several times faster). ``summaries=False``: the calls'
    one-line summaries, which only the screen shows, are not made.
    """
    load = functools.partial(load_episode, verdict_only=verdict_only, summaries=summaries)
    if parallel and _worth_a_process(a, b):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        try:
            with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
                later = pool.submit(load, b)
                side_a = load(a)
                return diff_calls(side_a, later.result())
        except BrokenProcessPool:
            pass  # the worker died (memory, a signal): one process still gives the answer
    return diff_calls(load(a), load(b))


def _worth_a_process(a: str, b: str) -> bool:
    import os

    from smoldata_tui.diff.calls import resolve_trace

    if (os.cpu_count() or 1) < 2:
        return False
    sizes = [resolve_trace(path).stat().st_size for path in (a, b)]
    return min(sizes) >= PARALLEL_MIN_BYTES


__all__ = [
    "CHANGED",
    "ONLY_A",
    "ONLY_B",
    "SAME",
    "Call",
    "DiffInputError",
    "EpisodeCalls",
    "EpisodeDiff",
    "Pair",
    "SideFacts",
    "SkippedLine",
    "diff_calls",
    "diff_json",
    "diff_paths",
    "load_episode",
    "side_facts",
]
