"""Fuzzing the frame reader and the codecs (protocol/framing.py): bad bytes never escape as
anything but the protocol's own errors.

What is fed: arbitrary bytes; frames cut into arbitrary pieces; length prefixes up to 4 GiB;
valid requests of every kind (both encodings) with one to three mutations each (a field
replaced by a value of any type, removed, or added; huge and out-of-range numbers such as
``1e999`` and 30-digit integers; nesting thousands of levels deep) and then, sometimes,
truncated, extended or bit-flipped.

Properties (docs/protocol.md, "Frames"):

- :meth:`Codec.decode_request` returns a request or raises :class:`InvalidRequest` or
  :class:`MalformedFrame`; nothing else. A payload that is well-formed JSON/msgpack is never
  ``MalformedFrame`` (the connection stays open). An InvalidRequest of a map names a path (a
  prefix of, or inside, a mutated field when no tag was touched), echoes the map's integer
  ``id`` when it is in range (a payload too deep to read may not get its id), and keeps its
  message short whatever the client sent.
- :class:`FrameReader` returns exactly the frames fed, in order, however they are cut, and
  raises :class:`FrameTooLarge` as soon as an oversized header is complete, before any of the
  body is read or allocated.

CI runs a short form. The long form::

    PODIUM_FUZZ_EXAMPLES=20000 pytest -o faulthandler_timeout=0 tests/property/test_fuzz_frames.py

(docs/reliability.md, "Fuzzing", records a run.)
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
import struct
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from frame_fuzzing import (
    DECODER_DEPTH,
    ENCODINGS,
    NODE,
    SHALLOW_DEPTH,
    VALUES,
    Deep,
    Mutated,
    Path,
    encode,
    fuzz,
    mutated_requests,
)
from hypothesis import assume, given, note
from hypothesis import strategies as st

from podium.protocol.errors import FrameTooLarge, InvalidRequest, MalformedFrame
from podium.protocol.framing import (
    _SCAN_ITEMS,
    HEADER_BYTES,
    MAX_FRAME_BYTES_LIMIT,
    Codec,
    FrameReader,
    decode_hello,
    decode_hello_reply,
    frame,
)
from podium.protocol.wire import Hello, HelloReply, Request

# A failing example holding a megabyte string is printed whole: let the failure, not
# Hypothesis' warning about the size of its report, be what fails.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning"
)

CODECS = {name: Codec(name) for name in ENCODINGS}  # type: ignore[arg-type]
MAX_MESSAGE = 4096
"""An error message (reason and path) stays under this, whatever the client sent."""

# --------------------------------------------------------------------------- checks


_CLIPPED = re.compile(r"\.\.\. \(\d+ more characters\)$")
"""The end of a path the codec cut short (an unknown field's name can be megabytes long)."""


def _segments(path: str) -> list[str]:
    """``$.objects[0].spec.x['a']`` -> ``['objects', '0', 'spec', 'x', 'a']``; a key cut short
    (``['abc'...]``, or the end of a whole path cut short) as ``abc...``."""
    clipped = _CLIPPED.search(path)
    if clipped is not None:
        head = path[: clipped.start()]
        last = max(head.rfind("."), head.rfind("["))
        out = _segments(head[:last]) if last > 0 else []
        cut = head[last + 1 :].lstrip("'\"") if last >= 0 else head
        return [*out, f"{cut}..."]
    out = []
    position = 1
    while position < len(path):
        if path[position] == ".":
            end = position + 1
            while end < len(path) and path[end] not in ".[":
                end += 1
            out.append(path[position + 1 : end])
            position = end
        elif path.startswith("[...]", position):
            out.append("*")
            position += 5
        elif path[position] == "[" and path[position + 1 : position + 2] in ("'", '"'):
            quote, end = path[position + 1], position + 2
            while end < len(path) and path[end] != quote:
                end += 2 if path[end] == "\\" else 1
            key = ast.literal_eval(path[position + 1 : end + 1])
            cut = path.startswith("...", end + 1)
            out.append(f"{key}..." if cut else key)
            position = path.index("]", end + 1) + 1
        elif path[position] == "[":
            end = path.index("]", position)
            out.append(path[position + 1 : end])
            position = end + 1
        else:
            break
    return out


def _compatible(reported: list[str], mutated: Path) -> bool:
    """One path is a prefix of the other (``*`` and a shortened key match anything)."""
    for a, b in zip(reported, (str(step) for step in mutated), strict=False):
        if a in ("*", "...") or (a.endswith("...") and b.startswith(a[:-3])):
            continue
        if a != b:
            return False
    return True


def _well_formed(payload: bytes, encoding: str) -> bool | None:
    """Whether an independent reader takes the payload as one JSON/msgpack document (None:
    too many brackets to ask; the standard library's JSON parser recurses on the C stack)."""
    if payload.count(b"[") + payload.count(b"{") > 200:
        return None
    try:
        if encoding == "json":
            json.loads(payload.decode("utf-8"), parse_constant=_refuse)
        else:
            msgspec.msgpack.decode(payload)
    except (ValueError, msgspec.DecodeError):
        return False
    except RecursionError:
        return True  # too deep to read, but not malformed
    return True


def _refuse(text: str) -> Any:
    raise ValueError(text)


def _echoable_id(value: Any) -> int | None:
    if isinstance(value, dict):
        request_id = value.get("id")
        if type(request_id) is int and 0 <= request_id <= 2**63 - 1:
            return request_id
    return None


def check_decode(
    codec: Codec, payload: bytes, value: Any | None, mutated: Mutated | None = None
) -> None:
    """Decode ``payload``; ``value`` is the tree it encodes (None: arbitrary bytes)."""
    outcome: Request | InvalidRequest | MalformedFrame
    try:
        outcome = codec.decode_request(payload)
    except (MalformedFrame, InvalidRequest) as exc:
        outcome = exc
    if isinstance(outcome, MalformedFrame):
        note(f"malformed: {outcome}")
        assert value is None, "a well-formed payload was called malformed"
        if codec.encoding == "json":
            assert _well_formed(payload, "json") is not True, str(outcome)
    elif isinstance(outcome, InvalidRequest):
        note(f"invalid: {outcome.request_id} {outcome.path} {outcome.message[:300]}")
        check_invalid(outcome, value, mutated)
    else:
        assert isinstance(outcome, Request)


def _holds_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than the decoder follows somewhere."""
    if isinstance(value, Deep):
        return value.depth > SHALLOW_DEPTH
    if isinstance(value, dict):
        return any(_holds_deep(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_deep(v) for v in value)
    return False


def check_invalid(exc: InvalidRequest, value: Any | None, mutated: Mutated | None) -> None:
    assert exc.code == "invalid"
    assert len(exc.message) + len(exc.path or "") < MAX_MESSAGE, len(exc.message)
    assert exc.path is None or exc.path.startswith("$"), exc.path
    too_deep = "nests deeper" in exc.message
    if value is None:
        assert exc.request_id >= -1
        return
    want = _echoable_id(value)
    if too_deep or _holds_deep(value):
        # The id is looked for by a scan past nesting the decoder cannot follow, and may lie
        # beyond what the scan reads.
        assert exc.request_id in (-1, want), (exc.request_id, want)
    else:
        assert exc.request_id == (-1 if want is None else want), (exc.request_id, want)
    if isinstance(value, dict) and not too_deep:
        assert exc.path is not None, exc.message
    if mutated is not None and not mutated.touched_tag and exc.path is not None:
        reported = _segments(exc.path)
        assert any(_compatible(reported, p) for p in mutated.paths), (exc.path, mutated.paths)


# --------------------------------------------------------------------------- decode


@fuzz(300)
@given(encoding=st.sampled_from(ENCODINGS), payload=st.binary(max_size=300))
def test_arbitrary_bytes_decode_or_raise_a_protocol_error(encoding: str, payload: bytes) -> None:
    check_decode(CODECS[encoding], payload, None)


@fuzz(120)
@given(encoding=st.sampled_from(ENCODINGS), value=VALUES)
def test_any_well_formed_value_is_a_request_or_invalid(encoding: str, value: Any) -> None:
    payload = encode(value, encoding)
    check_decode(CODECS[encoding], payload, value)


@fuzz(200)
@given(encoding=st.sampled_from(ENCODINGS), mutated=mutated_requests())
def test_mutated_requests_are_invalid_at_the_mutated_field(encoding: str, mutated: Mutated) -> None:
    note(f"paths: {mutated.paths}")
    payload = encode(mutated.value, encoding)
    check_decode(CODECS[encoding], payload, mutated.value, mutated)


@fuzz(120)
@given(
    encoding=st.sampled_from(ENCODINGS),
    mutated=mutated_requests(),
    edit=st.sampled_from(["truncate", "append", "flip", "splice"]),
    data=st.data(),
)
def test_corrupted_requests_never_escape_the_protocol_errors(
    encoding: str, mutated: Mutated, edit: str, data: st.DataObject
) -> None:
    payload = encode(mutated.value, encoding)
    assume(len(payload) < 1_000_000)
    at = data.draw(st.integers(0, len(payload)), label="at")
    if edit == "truncate":
        payload = payload[:at]
    elif edit == "append":
        payload += data.draw(st.binary(min_size=1, max_size=8), label="tail")
    elif edit == "flip" and payload:
        at = min(at, len(payload) - 1)
        bit = data.draw(st.integers(0, 7), label="bit")
        payload = payload[:at] + bytes([payload[at] ^ (1 << bit)]) + payload[at + 1 :]
    else:
        payload = payload[:at] + data.draw(st.binary(max_size=16), label="spliced") + payload[at:]
    check_decode(CODECS[encoding], payload, None)


@fuzz(200)
@given(encoding=st.sampled_from(ENCODINGS), payload=st.binary(max_size=200))
def test_replies_decode_or_raise_a_protocol_error(encoding: str, payload: bytes) -> None:
    """The client's side reads the daemon's frames with the same machinery."""
    with contextlib.suppress(InvalidRequest, MalformedFrame):
        CODECS[encoding].decode_reply(payload)


@fuzz(200)
@given(value=VALUES | st.fixed_dictionaries({"msg": st.just("hello"), "protocol": VALUES}))
def test_a_hello_is_a_hello_or_invalid_without_an_id(value: Any) -> None:
    payload = encode(value, "json")
    for decode in (decode_hello, decode_hello_reply):
        outcome: msgspec.Struct | InvalidRequest
        try:
            outcome = decode(payload)
        except InvalidRequest as exc:
            outcome = exc
        if isinstance(outcome, InvalidRequest):
            assert outcome.request_id == -1
            assert len(outcome.message) < MAX_MESSAGE
        else:
            assert isinstance(outcome, Hello | HelloReply | msgspec.Struct)


# --------------------------------------------------------------------------- nesting


def _at_stack_depth(depth: int, call: Callable[[], Any]) -> Any:
    """Run ``call`` ``depth`` Python frames further down the stack."""
    if depth <= 0:
        return call()
    return _at_stack_depth(depth - 1, call)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("where", ["unknown field", "typed field", "top level", "id after"])
@pytest.mark.parametrize("depth", [DECODER_DEPTH, 4 * DECODER_DEPTH])
def test_deep_nesting_is_invalid_with_its_id_and_path(
    encoding: str, where: str, depth: int
) -> None:
    deep = Deep(depth)
    value: Any
    if where == "unknown field":
        value = {"msg": "put", "id": 7, "objects": [{**NODE, "extra": deep}]}
    elif where == "typed field":
        value = {"msg": "get", "id": 7, "kind": deep}
    elif where == "top level":
        value = deep
    else:
        value = {"msg": "stats", "extra": deep, "id": 7}
    payload = encode(value, encoding)
    for stack in (0, sys.getrecursionlimit() // 2):
        with pytest.raises(InvalidRequest) as info:
            _at_stack_depth(stack, lambda: CODECS[encoding].decode_request(payload))
        exc = info.value
        if where == "top level":
            assert exc.request_id == -1
            continue
        # The scan for an id stops after _SCAN_ITEMS items: one behind them is not found.
        in_reach = where != "id after" or 2 * depth < _SCAN_ITEMS
        assert exc.request_id == (7 if in_reach else -1), exc.message
        assert exc.path is not None, exc.message
        if where == "unknown field" and "nests deeper" in exc.message:
            assert exc.path.startswith("$.objects[0].extra[0][0]"), exc.path
        if where == "typed field":
            assert exc.path == "$.kind"


def test_a_deep_map_of_unknown_fields_names_its_keys() -> None:
    payload = encode({"msg": "stats", "id": 3, "x": Deep(DECODER_DEPTH, as_map=True)}, "msgpack")
    with pytest.raises(InvalidRequest) as info:
        CODECS["msgpack"].decode_request(payload)
    assert (info.value.request_id, info.value.path) == (3, "$.x.a.a.a.a.a.a.a.a.a.a.a")


# --------------------------------------------------------------------------- frames


@dataclass
class Stream:
    frames: list[bytes]
    data: bytes
    cuts: list[int]
    limit: int


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    limit = draw(st.sampled_from([0, 1, 16, 300, MAX_FRAME_BYTES_LIMIT]))
    frames = draw(st.lists(st.binary(max_size=400), max_size=8))
    data = b"".join(frame(f) for f in frames)
    if draw(st.booleans()):
        # A header announcing far more than anyone sends, maybe with a little body.
        size = draw(st.sampled_from([2**24 + 1, 2**31, 2**32 - 1]))
        data += struct.pack(">I", size) + draw(st.binary(max_size=16))
    elif draw(st.booleans()):
        data += draw(st.binary(max_size=8))  # a trailing partial frame
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=10)))
    return Stream(frames, data, cuts, limit)


@fuzz(300)
@given(stream=streams())
def test_the_reader_returns_exactly_the_frames_however_they_are_cut(stream: Stream) -> None:
    reader = FrameReader(stream.limit)
    got: list[bytes] = []
    fed = 0
    too_large: FrameTooLarge | None = None
    for end in [*stream.cuts, len(stream.data)]:
        reader.feed(stream.data[fed:end])
        fed = max(fed, end)
        try:
            while (payload := reader.next_frame()) is not None:
                got.append(payload)
        except FrameTooLarge as exc:
            too_large = exc
            break
        assert reader.buffered() <= fed
    # A reference cut of the same bytes.
    want: list[bytes] = []
    position = 0
    want_too_large: int | None = None
    while len(stream.data) - position >= HEADER_BYTES:
        (size,) = struct.unpack_from(">I", stream.data, position)
        if size > stream.limit:
            want_too_large = size
            break
        if len(stream.data) - position - HEADER_BYTES < size:
            break
        want.append(stream.data[position + HEADER_BYTES : position + HEADER_BYTES + size])
        position += HEADER_BYTES + size
    assert got == want
    if want_too_large is None:
        assert too_large is None
        assert reader.buffered() == len(stream.data) - position
    else:
        assert too_large is not None
        assert (too_large.size, too_large.limit) == (want_too_large, stream.limit)
        # Raised as soon as the header was complete: no more of the body was waited for.
        assert fed <= max(position + HEADER_BYTES, *stream.cuts, 0) or fed == len(stream.data)


@pytest.mark.parametrize("size", [2**24 + 1, 2**31, 2**32 - 1])
def test_an_oversized_header_is_refused_before_its_body_is_allocated(size: int) -> None:
    reader = FrameReader()
    tracemalloc.start()
    try:
        for byte in struct.pack(">I", size)[:-1]:
            reader.feed(bytes([byte]))
            assert reader.next_frame() is None
        reader.feed(struct.pack(">I", size)[-1:])
        with pytest.raises(FrameTooLarge) as info:
            reader.next_frame()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.size == size
    assert peak < 1 << 20, f"{peak} bytes allocated for a {size}-byte announcement"


def test_a_header_within_a_4_gib_limit_waits_without_allocating() -> None:
    reader = FrameReader(MAX_FRAME_BYTES_LIMIT)
    tracemalloc.start()
    try:
        reader.feed(struct.pack(">I", MAX_FRAME_BYTES_LIMIT) + b"x" * 1000)
        assert reader.next_frame() is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reader.buffered() == HEADER_BYTES + 1000
    assert peak < 1 << 20


# --------------------------------------------------------------------------- regressions
# Each found by the tests above; the minimal example of each, fixed in protocol/.


def test_a_msgpack_string_that_is_not_utf8_is_malformed() -> None:
    # msgspec raised UnicodeDecodeError, which escaped the codec: the gateway logged a
    # traceback and dropped the connection without an answer.
    for payload in (b"\xa2\x00\x80", b"\x83\xa3msg\xa3get\xa2id\x01\xa4kind\xa2\x00\x80"):
        with pytest.raises(MalformedFrame, match="as msgpack"):
            CODECS["msgpack"].decode_request(payload)


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        (
            b'{"containers":[{"resources":{"requests":{"cpu":1e999}}}]}',
            "$.objects[0].spec.containers[0].resources.requests['cpu']",
        ),
        (b'{"priority":' + b"9" * 5000 + b"}", "$.objects[0].spec.priority"),
    ],
)
def test_a_number_beyond_a_double_or_64_bits_is_invalid_not_malformed(
    spec: bytes, path: str
) -> None:
    # Valid JSON that msgspec cannot decode untyped was called malformed (connection closed).
    payload = (
        b'{"msg":"put","id":4,"objects":[{"kind":"Pod","metadata":{"name":"p"},"spec":'
        + spec
        + b"}]}"
    )
    with pytest.raises(InvalidRequest) as info:
        CODECS["json"].decode_request(payload)
    assert (info.value.request_id, info.value.path) == (4, path)


def test_a_deep_unknown_field_is_invalid_with_id_and_path_not_a_recursion_error() -> None:
    depth = DECODER_DEPTH
    payload = b'{"msg":"stats","id":5,"x":' + b"[" * depth + b"]" * depth + b"}"
    with pytest.raises(InvalidRequest) as info:
        CODECS["json"].decode_request(payload)
    assert info.value.request_id == 5
    assert info.value.path == "$.x" + "[0]" * 11


@pytest.mark.parametrize(
    ("field", "value", "path", "message"),
    [
        ("value", 10**30, "$.objects[0].value", "Expected `int` <= 2147483647"),
        ("value", -(2**31) - 1, "$.objects[0].value", "Expected `int` >= -2147483648"),
    ],
)
def test_integers_beyond_their_kubernetes_type_are_invalid(
    field: str, value: int, path: str, message: str
) -> None:
    # A PriorityClass value of 10**30 decoded, was stored, and then could not be encoded in
    # msgpack (the SQLite store's commit, every msgpack reply and watch): OverflowError.
    obj = {"kind": "PriorityClass", "metadata": {"name": "x"}, field: value}
    payload = json.dumps({"msg": "put", "id": 2, "objects": [obj]}).encode()
    with pytest.raises(InvalidRequest) as info:
        CODECS["json"].decode_request(payload)
    assert (info.value.request_id, info.value.path) == (2, path)
    assert info.value.message.startswith(message)


def test_a_long_unknown_field_or_value_is_not_echoed_whole() -> None:
    long = "k" * 100_000
    hello = json.dumps({"msg": "hello", long: 1}).encode()
    request = json.dumps({"msg": long, "id": 3}).encode()
    for decode, payload in ((decode_hello, hello), (CODECS["json"].decode_request, request)):
        with pytest.raises(InvalidRequest) as info:
            decode(payload)
        assert len(info.value.message) < 2000
        assert len(info.value.path or "") < 600


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_path_cut_short_still_names_the_field(encoding: str) -> None:
    # Found on 3.13 in CI: the test took the cut path ``$.refs[0].xxx... (N more
    # characters)`` for another field than the mutated one.
    key = "x" * 50_000
    value = {"msg": "delete", "id": 2, "refs": [{"kind": "Pod", "name": "p", key: 1}]}
    with pytest.raises(InvalidRequest) as info:
        CODECS[encoding].decode_request(encode(value, encoding))
    assert info.value.path is not None and len(info.value.path) < 600
    check_invalid(info.value, value, Mutated(value, [("refs", 0, key)], touched_tag=False))


def test_quantities_with_thousands_of_digits_are_quantity_errors() -> None:
    from podium.protocol.quantity import QuantityError, parse_quantity

    for text in ("9" * 5000, "1e" + "9" * 5000, "0." + "0" * 5000 + "1"):
        with pytest.raises(QuantityError, match="more than 128 digits") as info:
            parse_quantity(text)
        assert len(str(info.value)) < 200
