from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from smoldata_tui.trace.reader import LineFramer, may_hold_extra_breaks, read_at_most


def frame(data: bytes, cuts: list[int]) -> list[tuple[int, int, bytes, bool]]:
    framer = LineFramer()
    batches = []
    position = 0
    for cut in sorted(cuts) + [len(data)]:
        cut = min(max(cut, position), len(data))
        batches.append(framer.feed(data[position:cut]))
        position = cut
    batches.append(framer.close())
    lines = []
    for batch in batches:
        if batch is None:
            continue
        offset = batch.offset
        for number, line in enumerate(batch.lines, start=batch.first_line):
            lines.append((number, offset, line, batch.terminated))
            offset += len(line) + 1
        # A batch that says no line can split really holds no such break.
        if not batch.may_split:
            assert not any(may_hold_extra_breaks(line) for line in batch.lines)
    return lines


@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=6))
def test_any_chunking_gives_the_same_lines_with_numbers_and_offsets(data, cuts):
    lines = frame(data, cuts)
    assert lines == frame(data, [])
    for index, (number, offset, line, _terminated) in enumerate(lines):
        assert number == index + 1
        assert data[offset : offset + len(line)] == line  # offsets locate every line
    assert b"\n".join(line for _, _, line, _ in lines) == (data[:-1] if data.endswith(b"\n") else data)


@given(st.text(max_size=60), st.lists(st.integers(0, 240), max_size=6))
def test_a_break_cut_across_chunks_is_still_flagged(text, cuts):
    data = ("x" + text + "\u2028" + text + "\n").encode()
    framer = LineFramer()
    position, flagged = 0, False
    for cut in sorted(cuts) + [len(data)]:
        cut = min(max(cut, position), len(data))
        batch = framer.feed(data[position:cut])
        position = cut
        if batch is not None:
            flagged |= batch.may_split
    assert flagged


def test_partial_line_is_held_back_until_newline_or_close():
    framer = LineFramer()
    assert framer.feed(b'{"type":') is None
    assert framer.pending_bytes == 8
    batch = framer.feed(b'"text"}\n{"ty')
    assert batch.lines == [b'{"type":"text"}'] and batch.first_line == 1 and batch.offset == 0
    assert framer.bytes_framed == 16
    last = framer.close()
    assert last.lines == [b'{"ty'] and not last.terminated and last.first_line == 2 and last.offset == 16


def test_a_huge_line_in_small_reads_is_joined_once():
    framer = LineFramer()
    piece = b"x" * 65536
    for _ in range(160):  # 10 MiB without a newline
        assert framer.feed(piece) is None
    batch = framer.feed(b"\n")
    assert len(batch.lines[0]) == 160 * 65536


def test_read_at_most_reads_a_file_whole_or_up_to_its_limit(tmp_path):
    path = tmp_path / "sidecar"
    for size in (0, 1, 5000, 70_000, 200_000):
        data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        path.write_bytes(data)
        for limit in (1, 4096, 65_536, 65_537, 10 << 20):
            with open(path, "rb") as handle:
                assert read_at_most(handle, limit) == data[:limit]


def test_read_at_most_follows_a_file_that_grows_while_read(tmp_path):
    path = tmp_path / "growing"
    path.write_bytes(b"a" * 10)

    class Growing(io.FileIO):  # the file doubles after the first read: the stat size is stale
        grown = False

        def read(self, size=-1):
            chunk = super().read(size)
            if not self.grown:
                self.grown = True
                with open(path, "ab") as more:
                    more.write(b"b" * 100_000)
            return chunk

    with Growing(path, "rb") as handle:
        assert read_at_most(handle, 1 << 20) == b"a" * 10 + b"b" * 100_000
    with Growing(path, "rb") as handle:
        assert len(read_at_most(handle, 50_000)) == 50_000
