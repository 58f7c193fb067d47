"""Many small jobs (one per trace) on every CPU: in input order, or as they finish.

Starting a process costs more than analysing a small trace, so jobs go to the workers in
chunks, and the pool forks from a parent that has already imported the engine (the ``fork``
start method when the parent has only one thread, as the CLI does; ``forkserver`` with the
engine preloaded when it has more, as the TUI does, because forking a threaded process can
copy a lock another thread holds). Results come back pickled; callers keep them small.

A worker that dies (out of memory, killed) breaks the pool: the jobs it had not returned are
then run in this process, so a caller always gets one result per item.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from smoldata_tui.trace.parallel import cpu_count

Item = TypeVar("Item")
Result = TypeVar("Result")

MAX_CHUNK = 64  # items per task at most: results stream back at least this often
PRELOAD = ["smoldata_tui.fleet.work"]  # what a forkserver imports once for all its workers


def _run_chunk(func: Callable[[Item], Result], chunk: list[Item]) -> list[Result]:
    return [func(item) for item in chunk]


def chunk_size(count: int, workers: int) -> int:
    """About eight tasks per worker, so a worker that drew slow traces does not hold up the end."""
    return max(1, min(MAX_CHUNK, count // (workers * 8)))


def _context():
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    _start_helpers()
    return context


def _start_helpers() -> None:
    """Start multiprocessing's resource tracker and forkserver now, with the real stderr.

    The tracker is handed ``sys.stderr.fileno()``; a TUI has replaced ``sys.stderr`` with an
    object whose ``fileno()`` is -1, and starting it would fail ("bad value(s) in fds_to_keep").
    """
    from multiprocessing import forkserver, resource_tracker

    replaced = sys.stderr
    try:
        if sys.__stderr__ is not None:
            sys.stderr = sys.__stderr__
        resource_tracker.ensure_running()
        forkserver.ensure_running()
    finally:
        sys.stderr = replaced


def _chunks(items: list[Item], size: int) -> list[list[Item]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def _ramped_chunks(items: list[Item], size: int) -> list[list[Item]]:
    """Small chunks first (the first results come back soon), then chunks of ``size``."""
    chunks, start, step = [], 0, 2
    while start < len(items):
        step = min(size, step)
        chunks.append(items[start : start + step])
        start += step
        step *= 2
    return chunks


def in_order(
    func: Callable[[Item], Result], items: Iterable[Item], *, workers: int | None = None
) -> Iterator[Result]:
    """``map(func, items)`` on every CPU; results are yielded in the order of ``items``."""
    items = list(items)
    workers = min(workers or cpu_count(), len(items))
    if workers < 2:
        yield from map(func, items)
        return
    chunks = _ramped_chunks(items, chunk_size(len(items), workers))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context())
    try:
        futures: list[Future | None] = [pool.submit(_run_chunk, func, chunk) for chunk in chunks]
        for index, chunk in enumerate(chunks):
            future = futures[index]
            futures[index] = None  # let each chunk's results go once they are yielded
            try:
                results = future.result()
            except BrokenProcessPool:
                results = [func(item) for item in chunk]
            yield from results
    finally:
        # Also when the caller stops early (a closed pipe, Ctrl-C): drop the chunks not started.
        pool.shutdown(wait=True, cancel_futures=True)


def as_finished(
    func: Callable[[Item], Result],
    items: Iterable[Item],
    *,
    workers: int | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Iterator[list[Result]]:
    """Batches of results as soon as each is ready, in no particular order.

    ``cancelled`` is asked between batches; once it says yes, no more results are produced and
    the workers are stopped.
    """
    items = list(items)
    workers = min(workers or cpu_count(), len(items))
    if workers < 2:
        size = chunk_size(len(items), 1)
        for chunk in _chunks(items, size):
            if cancelled():
                return
            yield _run_chunk(func, chunk)
        return
    chunks = _ramped_chunks(items, chunk_size(len(items), workers))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context())
    try:
        pending = {pool.submit(_run_chunk, func, chunk): chunk for chunk in chunks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED, timeout=0.5)
            for future in done:
                chunk = pending.pop(future)
                try:
                    results = future.result()
                except BrokenProcessPool:
                    results = _run_chunk(func, chunk)
                if cancelled():
                    return
                yield results
            if cancelled():
                return
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
