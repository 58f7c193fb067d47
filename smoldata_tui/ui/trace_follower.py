"""Read a trace file on a background thread, feed the engine, tell the screen what is new.

One path for every mode: a saved trace is read to its end and finished; ``--follow`` keeps
polling for new bytes (never re-reading what it has); ``--speed`` playback reads only as far
as the playback clock has released. Only this thread touches the :class:`TraceAnalysis`;
the UI reads the engine's append-only ``events``/``findings`` lists up to the counts a
:class:`TraceFollower.Grew` message carried, plus the stats/verdict snapshots in it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from textual import work
from textual.message import Message
from textual.widget import Widget
from textual.worker import get_current_worker

from smoldata_tui.store.metadata import EpisodeMetadata, effective_status, metadata_path_for
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.trace import EventRecord, Finding, Stats, TraceAnalysis, Verdict

FIRST_CHUNK = 256 << 10  # small, so the first rows are on screen after a few milliseconds
CHUNK = 2 << 20
POLL_SECONDS = 0.05  # how often a followed file is checked for growth
POST_SECONDS = 0.1  # while loading, at most this often a progress message
LIVE_POST_SECONDS = 0.05  # once caught up with a growing file: new rows soon after they are written
METADATA_POLL_SECONDS = 0.5
SETTLE_SECONDS = 0.5  # a finished episode's trace must stop growing this long before it is final


def snapshot_stats(stats: Stats) -> Stats:
    """A copy the UI can read while the worker keeps counting."""
    return replace(
        stats,
        events_by_type=Counter(stats.events_by_type),
        calls_by_tool=Counter(stats.calls_by_tool),
        calls_by_status=Counter(stats.calls_by_status),
        tokens=Counter(stats.tokens),
        call_durations_ms=list(stats.call_durations_ms),
        step_durations_ms=list(stats.step_durations_ms),
    )


class TraceFollower(Widget):
    """A non-visual widget owning the reader thread; its messages bubble to the screen."""

    DEFAULT_CSS = "TraceFollower { display: none; }"

    @dataclass
    class Opened(Message):
        """A (new) analysis started; ``fd`` is a descriptor of the file the receiver must close."""

        generation: int
        fd: int
        events: list[EventRecord]
        findings: list[Finding]
        notice: str | None = None

    @dataclass
    class Grew(Message):
        generation: int
        event_count: int
        finding_count: int
        line_count: int
        verdict: Verdict
        stats: Stats
        bytes_read: int
        file_size: int
        finished: bool  # the analysis is final (end-of-stream findings included)
        caught_up: bool  # everything written (or released) so far has been read

    @dataclass
    class Waiting(Message):
        reason: str

    @dataclass
    class Failed(Message):
        reason: str

    @dataclass
    class MetadataChanged(Message):
        metadata: EpisodeMetadata | None
        problems: list[str]

    def __init__(self, path: Path, *, follow: bool, release_limit: int | None = None) -> None:
        super().__init__()
        self.path = Path(path)
        self.follow = follow
        # Playback releases bytes up to this offset (None = all); set from the UI thread.
        self.release_limit = release_limit
        self._wake = threading.Event()
        self._stop = threading.Event()

    def on_mount(self) -> None:
        self._read()

    def on_unmount(self) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def wake(self) -> None:
        """The file just grew (a live run says so): read now rather than at the next poll.

        Thread-safe, so the episode runner's thread may call it directly.
        """
        self._wake.set()

    def release_until(self, offset: int | None) -> None:
        """Let the reader go up to byte ``offset`` (None: everything); wakes it at once."""
        self.release_limit = offset
        self._wake.set()

    # --- the thread -------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="trace-follower", exit_on_error=False)
    def _read(self) -> None:
        worker = get_current_worker()

        def stopped() -> bool:
            return worker.is_cancelled or self._stop.is_set()

        try:
            _FollowLoop(self, stopped).run()
        except Exception as exc:  # noqa: BLE001 - the screen shows one clear line instead
            self.post_message(self.Failed(f"reading {self.path.name} failed: {type(exc).__name__}: {exc}"))

    def _sleep(self, seconds: float) -> None:
        self._wake.wait(seconds)
        self._wake.clear()


class _FollowLoop:
    """The state of one reader thread (kept off the widget so nothing else can touch it)."""

    def __init__(self, owner: TraceFollower, stopped) -> None:
        self.owner = owner
        self.stopped = stopped
        self.path = owner.path
        self.meta_path = metadata_path_for(self.path)
        self.meta_signature: tuple | None = None
        self.meta_checked = 0.0
        self.metadata: EpisodeMetadata | None = None
        self.generation = 0
        self.fd: int | None = None
        self.inode: tuple[int, int] | None = None
        self.analysis = TraceAnalysis(keep_events=True)
        self.offset = 0
        self.finished = False
        self.deleted_noted = False
        self.final_since: tuple[float, int] | None = None  # (since when, at which size)

    def post(self, message: Message) -> None:
        self.owner.post_message(message)

    # --- opening ------------------------------------------------------------------------------
    def open(self, notice: str | None = None) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        info = os.fstat(fd)
        if self.fd is not None:
            os.close(self.fd)
        self.fd = fd
        self.inode = (info.st_dev, info.st_ino)
        self.generation += 1
        self.analysis = TraceAnalysis(keep_events=True)
        self.offset = 0
        self.finished = False
        self.final_since = None
        events = self.analysis.events
        assert events is not None
        self.post(TraceFollower.Opened(self.generation, os.dup(fd), events, self.analysis.findings, notice))
        return True

    def run(self) -> None:
        self.check_metadata(force=True)
        if not self.open():
            self.post(TraceFollower.Waiting(f"waiting for {self.path.name} to appear"))
            while not self.open():
                if self.stopped():
                    return
                self.owner._sleep(POLL_SECONDS * 4)
                self.check_metadata()
        try:
            self.loop()
        finally:
            if self.fd is not None:
                os.close(self.fd)

    # --- reading ------------------------------------------------------------------------------
    def loop(self) -> None:
        owner = self.owner
        last_post = 0.0
        unposted = True  # something changed since the last Grew message
        first = True
        while not self.stopped():
            size = os.fstat(self.fd).st_size
            if owner.follow and self.replaced(size):
                last_post, unposted, first = 0.0, True, True
                continue
            limit = size if owner.release_limit is None else min(size, owner.release_limit)
            if self.offset < limit and not self.finished:
                want = min(FIRST_CHUNK if first else CHUNK, limit - self.offset)
                data = os.pread(self.fd, want, self.offset)
                if not data:
                    limit = self.offset  # the file shrank under us; the next pass notices
                else:
                    self.offset += len(data)
                    if self.analysis.feed(data):
                        unposted = True
                    first = False
            caught_up = self.offset >= limit
            everything_released = owner.release_limit is None or owner.release_limit >= size
            if caught_up and everything_released and not self.finished and self.should_finish(size):
                self.analysis.finish()
                self.add_episode_findings()
                self.finished = True
                unposted = True
            # At most one message per POST_SECONDS (the first and the last at once): a trace
            # growing by 1,000 events a second is drawn ten times a second, not per write.
            now = time.monotonic()
            spacing = LIVE_POST_SECONDS if caught_up else POST_SECONDS
            wait = 0.0 if last_post == 0.0 or self.finished else last_post + spacing - now
            if unposted and wait <= 0 and (owner.message_queue_size <= 4 or caught_up or self.finished):
                self.post_grew(size, caught_up)
                last_post, unposted = now, False
            if self.finished and not owner.follow:
                return
            if caught_up:
                self.check_metadata()
                owner._sleep(min(POLL_SECONDS, wait) if unposted and wait > 0 else POLL_SECONDS)

    def add_episode_findings(self) -> None:
        """The findings from outside the stream (sidecars, training file, capture record), as
        ``check`` and the fleet add them (``episode/findings.py``): the same list on every surface."""
        from smoldata_tui.episode.findings import episode_findings

        self.check_metadata(force=True)  # the runner saved it last: read what it says now
        analysis = self.analysis
        try:
            extra = episode_findings(self.path, analysis.findings, analysis.stats.calls_by_tool, self.metadata)
        except OSError:
            return  # the sidecars went away meanwhile: the stream's findings stand
        analysis.findings.extend(extra)

    def should_finish(self, size: int) -> bool:
        """Saved traces end at EOF; a followed one when its episode says it is over."""
        if not self.owner.follow:
            return True
        status = effective_status(self.metadata)  # a run whose process died is over too
        if status in (None, "running"):
            self.final_since = None
            return False
        # The runner writes the metadata after the trace; wait until the size holds still.
        now = time.monotonic()
        if self.final_since is None or self.final_since[1] != size:
            self.final_since = (now, size)
            return False
        return now - self.final_since[0] >= SETTLE_SECONDS

    def replaced(self, size: int) -> bool:
        """Truncated or rotated: start over on the file now at the path, with a notice."""
        name = self.path.name
        if size < self.offset:
            return self.open(f"{name} was truncated ({size:,} bytes < {self.offset:,} read): reading it again")
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            if not self.deleted_noted:
                self.deleted_noted = True
                self.post(TraceFollower.Waiting(f"{name} was deleted; showing what had been written"))
            return False
        self.deleted_noted = False
        if (info.st_dev, info.st_ino) != self.inode:
            return self.open(f"{name} was replaced by a new file: reading the new one")
        return False

    def post_grew(self, size: int, caught_up: bool) -> None:
        analysis = self.analysis
        self.post(
            TraceFollower.Grew(
                generation=self.generation,
                event_count=analysis.event_count,
                finding_count=len(analysis.findings),
                line_count=analysis.line_count,
                verdict=analysis.verdict(),
                stats=snapshot_stats(analysis.stats),
                bytes_read=self.offset,
                file_size=size,
                finished=self.finished,
                caught_up=caught_up,
            )
        )

    # --- the metadata file beside the trace ---------------------------------------------------
    def check_metadata(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.meta_checked < METADATA_POLL_SECONDS:
            return
        self.meta_checked = now
        try:
            info = os.stat(self.meta_path)
            signature: tuple | None = (info.st_mtime_ns, info.st_size, info.st_ino)
        except OSError:
            signature = None
        if signature == self.meta_signature and not force:
            return
        self.meta_signature = signature
        problems: list[str] = []
        self.metadata = load_metadata(self.meta_path, problems) if signature is not None else None
        if signature is not None or force:
            self.post(TraceFollower.MetadataChanged(self.metadata, problems))
