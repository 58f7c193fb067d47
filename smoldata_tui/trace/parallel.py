"""Analyse a big trace file in parts, one per CPU, and merge them in order.

Per-event Python work (verdict, findings, stats) costs more than parsing, so a
large file is cut at line boundaries and each part is analysed in its own
process. The parts are merged back in stream order; the result is the one a
single sequential pass gives (property-tested against it).
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from smoldata_tui.trace.analysis import CHUNK_SIZE, TraceAnalysis, TraceReport, analyze_path

PARALLEL_MIN_BYTES = 32 * 1024 * 1024  # below this, starting processes costs more than it saves


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def split_points(path: Path, parts: int) -> list[int]:
    """Offsets that cut the file into up to ``parts`` runs of whole lines: [0, …, size]."""
    size = path.stat().st_size
    points = [0]
    with path.open("rb") as handle:
        for k in range(1, parts):
            position = max(points[-1], size * k // parts)
            handle.seek(position)
            while chunk := handle.read(1 << 16):
                cut = chunk.find(b"\n")
                if cut >= 0:
                    position += cut + 1
                    if position < size:
                        points.append(position)
                    break
                position += len(chunk)
    return points + [size]


_WINDOW = 16 * 1024 * 1024  # a multiple of mmap.ALLOCATIONGRANULARITY
_SPARSE = 16_000  # newlines per window up to which memchr hops beat counting a copy


def _lines_before(handle, offset: int) -> int:
    """Newlines in the first ``offset`` bytes.

    Lines of a trace are long, so hopping from newline to newline with memchr over a
    mapped window beats copying the bytes to count them; a window dense with newlines
    is counted the plain way instead. Windows are mapped one at a time, so the pages
    never pile up in this process's memory.
    """
    fd = handle.fileno()
    newlines = 0
    for start in range(0, offset, _WINDOW):
        length = min(_WINDOW, offset - start)
        with mmap.mmap(fd, length, offset=start, access=mmap.ACCESS_READ) as window:
            found, position = 0, 0
            while found <= _SPARSE and (position := window.find(b"\n", position)) >= 0:
                found += 1
                position += 1
        newlines += found if found <= _SPARSE else os.pread(fd, length, start).count(b"\n")
    return newlines


def analyze_part(path: str, start: int, end: int, last: bool, rider=None) -> TraceAnalysis:
    """Analyse the bytes [start, end) of a trace, numbering lines as in the whole file. ``rider``:
    rules fed by this part's events (see ``analyze_path``), numbering them from the part's start."""
    with open(path, "rb", buffering=0) as handle:
        analysis = TraceAnalysis(first_line=_lines_before(handle, start) + 1, offset=start, rider=rider)
        handle.seek(start)
        left = end - start
        while left > 0:
            chunk = handle.read(min(CHUNK_SIZE, left))
            if not chunk:
                break
            analysis.feed(chunk)
            left -= len(chunk)
    analysis.end_part(last=last)
    return analysis


def analyze_path_parallel(path: str | os.PathLike[str], *, workers: int | None = None, rider=None) -> TraceReport:
    """Like ``analyze_path(path, rider=rider)[0]``, using up to ``workers`` processes for a big file.

    ``rider`` also needs ``merge(later, events_before)``: each later part feeds a fresh rider of its
    type (``type(rider)()``) in its own process, merged into ``rider`` in stream order, so the rules
    that ride on the analysis cost no second read of the file.
    """
    path = Path(path)
    workers = workers or cpu_count()
    if workers < 2 or path.stat().st_size < PARALLEL_MIN_BYTES:
        return analyze_path(path, rider=rider)[0]
    points = split_points(path, workers)
    ranges = list(zip(points, points[1:]))
    if len(ranges) < 2:
        return analyze_path(path, rider=rider)[0]
    try:
        return _analyze_ranges(path, ranges, rider)
    except BrokenProcessPool:
        # A worker died (out of memory, killed): the sequential pass still gives the answer.
        if rider is not None:
            rider.__init__()  # it had taken the first part's events: start it again
        return analyze_path(path, rider=rider)[0]


def _analyze_part_with_rider(path: str, start: int, end: int, last: bool, rider_type) -> tuple[TraceAnalysis, object]:
    rider = rider_type() if rider_type is not None else None
    return analyze_part(path, start, end, last, rider), rider


def _analyze_ranges(path: Path, ranges: list[tuple[int, int]], rider=None) -> TraceReport:
    context = multiprocessing.get_context("fork")  # the parent is a CLI without threads
    rider_type = type(rider) if rider is not None else None
    with ProcessPoolExecutor(max_workers=len(ranges) - 1, mp_context=context) as pool:
        later = [
            pool.submit(_analyze_part_with_rider, str(path), start, end, index == len(ranges) - 1, rider_type)
            for index, (start, end) in enumerate(ranges[1:], start=1)
        ]
        first_start, first_end = ranges[0]
        analysis = analyze_part(str(path), first_start, first_end, False, rider)
        for future in later:
            part, part_rider = future.result()
            if rider is not None:
                rider.merge(part_rider, analysis.event_count)
            analysis.merge(part)
    return analysis.finish()
