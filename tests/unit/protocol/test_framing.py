"""Length-prefixed frames (protocol/framing.py): frame() and FrameReader, sans-IO."""

from __future__ import annotations

import random
import struct

import pytest

from podium.protocol.errors import FrameTooLarge, ProtocolError
from podium.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    HEADER_BYTES,
    MAX_FRAME_BYTES_LIMIT,
    FrameReader,
    frame,
)


def _payloads(count: int, seed: int = 0, max_size: int = 300) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randrange(max_size)) for _ in range(count)]


def _drain(reader: FrameReader) -> list[bytes]:
    out = []
    while (payload := reader.next_frame()) is not None:
        out.append(payload)
    return out


# --------------------------------------------------------------------------- frame()


def test_frame_is_a_big_endian_length_then_the_payload() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame(b"x" * 0x0102) == b"\x00\x00\x01\x02" + b"x" * 0x0102
    assert HEADER_BYTES == 4
    assert DEFAULT_MAX_FRAME_BYTES == 16 * 1024 * 1024


def test_frame_of_an_empty_payload_is_a_bare_header() -> None:
    assert frame(b"") == b"\x00\x00\x00\x00"


def test_frame_refuses_a_payload_no_header_can_announce(monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 GiB cannot be allocated in a unit test; lower the limit the function reads instead.
    import podium.protocol.framing as framing

    monkeypatch.setattr(framing, "MAX_FRAME_BYTES_LIMIT", 3)
    with pytest.raises(FrameTooLarge) as info:
        frame(b"four")
    assert (info.value.size, info.value.limit) == (4, 3)


# --------------------------------------------------------------------------- FrameReader


def test_an_empty_reader_needs_more_bytes() -> None:
    reader = FrameReader()
    assert reader.next_frame() is None
    assert reader.buffered() == 0
    assert reader.max_frame_bytes == DEFAULT_MAX_FRAME_BYTES


def test_one_frame_fed_byte_by_byte_appears_only_when_complete() -> None:
    reader = FrameReader()
    data = frame(b"hello")
    for i, byte in enumerate(data[:-1]):
        reader.feed(bytes([byte]))
        assert reader.next_frame() is None, f"frame after {i + 1} of {len(data)} bytes"
        assert reader.buffered() == i + 1
    reader.feed(data[-1:])
    assert reader.next_frame() == b"hello"
    assert reader.next_frame() is None
    assert reader.buffered() == 0


def test_many_frames_fed_byte_by_byte() -> None:
    payloads = _payloads(40, seed=1, max_size=20)
    stream = b"".join(frame(p) for p in payloads)
    reader = FrameReader()
    got = []
    for byte in stream:
        reader.feed(bytes([byte]))
        got.extend(_drain(reader))
    assert got == payloads
    assert reader.buffered() == 0


def test_many_frames_in_one_feed() -> None:
    payloads = _payloads(500, seed=2)
    reader = FrameReader()
    reader.feed(b"".join(frame(p) for p in payloads))
    assert _drain(reader) == payloads
    assert reader.buffered() == 0


def test_many_tiny_frames_in_one_feed() -> None:
    # 20k one-byte frames (100 KB, past the 64 KiB compaction point): cutting them must not
    # re-copy the buffer each time.
    reader = FrameReader()
    reader.feed(frame(b"x") * 20_000)
    assert _drain(reader) == [b"x"] * 20_000


@pytest.mark.parametrize("seed", range(8))
def test_random_splits_give_back_the_same_payloads(seed: int) -> None:
    # Chunks up to 9 KiB over ~300 KiB of frames: cuts fall inside headers and bodies, and the
    # consumed prefix is dropped (past 64 KiB) while a partial frame is pending.
    payloads = _payloads(1000, seed=seed, max_size=600)
    payloads[seed] = b""
    stream = b"".join(frame(p) for p in payloads)
    rng = random.Random(seed)
    reader = FrameReader()
    got: list[bytes] = []
    position = 0
    while position < len(stream):
        step = rng.randrange(1, 9 * 1024)
        reader.feed(stream[position : position + step])
        position += step
        got.extend(_drain(reader))
        consumed = sum(HEADER_BYTES + len(p) for p in got)
        assert reader.buffered() == min(position, len(stream)) - consumed
    assert got == payloads


def test_zero_length_payloads_are_frames() -> None:
    reader = FrameReader()
    reader.feed(frame(b"") + frame(b"a") + frame(b""))
    assert _drain(reader) == [b"", b"a", b""]


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    reader = FrameReader(max_frame_bytes=8)
    reader.feed(frame(b"12345678"))
    assert reader.next_frame() == b"12345678"


def test_an_oversize_header_raises_before_the_body_arrives() -> None:
    reader = FrameReader(max_frame_bytes=8)
    reader.feed(frame(b"ok"))
    reader.feed(struct.pack(">I", 9))
    assert reader.next_frame() == b"ok"
    with pytest.raises(FrameTooLarge) as info:
        reader.next_frame()
    err = info.value
    assert (err.size, err.limit, err.code) == (9, 8, "too_large")
    assert isinstance(err, ProtocolError)
    assert str(err) == "frame of 9 bytes exceeds the limit of 8 bytes"
    # Nothing of the body was awaited or buffered; the reader stays at the bad header.
    assert reader.buffered() == HEADER_BYTES
    with pytest.raises(FrameTooLarge):
        reader.next_frame()


def test_the_default_limit_refuses_a_header_of_16_mib_plus_one() -> None:
    reader = FrameReader()
    reader.feed(struct.pack(">I", DEFAULT_MAX_FRAME_BYTES + 1) + b"partial body")
    with pytest.raises(FrameTooLarge) as info:
        reader.next_frame()
    assert info.value.size == 16 * 1024 * 1024 + 1


def test_an_oversize_header_split_across_feeds_raises_once_complete() -> None:
    reader = FrameReader(max_frame_bytes=100)
    header = struct.pack(">I", 0xFFFFFFFF)
    reader.feed(header[:3])
    assert reader.next_frame() is None
    reader.feed(header[3:])
    with pytest.raises(FrameTooLarge):
        reader.next_frame()


@pytest.mark.parametrize("limit", [-1, MAX_FRAME_BYTES_LIMIT + 1])
def test_a_limit_no_header_can_express_is_refused(limit: int) -> None:
    with pytest.raises(ValueError, match="max_frame_bytes must be between 0 and 4294967295"):
        FrameReader(max_frame_bytes=limit)


def test_feed_accepts_bytearray_and_memoryview() -> None:
    reader = FrameReader()
    data = frame(b"abc") + frame(b"de")
    reader.feed(bytearray(data[:5]))
    reader.feed(memoryview(data)[5:])
    assert _drain(reader) == [b"abc", b"de"]
