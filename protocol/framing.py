"""Length-prefixed frames and the msgpack/JSON codecs of the wire messages, sans-IO.

Nothing here touches a socket or trio: the gateway (and any client) feeds received bytes into a
:class:`FrameReader`, takes whole payloads out, and turns them into messages with a
:class:`Codec`; outgoing messages go the other way through :meth:`Codec.encode` and
:func:`frame`. docs/protocol.md describes the same rules for authors of other clients.

A frame is a 4-byte big-endian unsigned length and that many payload bytes::

    +--------+--------+--------+--------+=====================+
    |        length (uint32, big-endian)|  payload (length B) |
    +--------+--------+--------+--------+=====================+

The first frame each way is JSON (:func:`encode_hello`, :func:`decode_hello`,
:func:`decode_hello_reply`); every later frame uses the encoding the :class:`Hello` chose.

Error handling:
    Foreign exceptions are mapped here, at the boundary (STYLE.md, "Errors"):

    - a header announcing more than the limit raises :class:`FrameTooLarge` (reply ``too_large``
      with id -1, then close the connection);
    - bytes that are not msgpack/JSON at all raise :class:`MalformedFrame` (reply ``invalid``
      with id -1, then close);
    - a payload that decodes but does not validate (``msgspec.ValidationError``: a wrong type, a
      missing field, an unknown ``msg``) raises :class:`InvalidRequest` carrying the request's
      ``id`` when it could be read and the field's path; the connection stays open.
"""

from __future__ import annotations

import re
import struct
import types
from collections.abc import Callable
from typing import Annotated, Any, Final, TypeVar, Union, get_args, get_origin

import msgspec

from podium.protocol.errors import (
    FrameTooLarge,
    InvalidRequest,
    MalformedFrame,
    split_validation_message,
)
from podium.protocol.objects import dec_hook, enc_hook
from podium.protocol.wire import (
    ClientMessage,
    Encoding,
    ErrorReply,
    Hello,
    HelloReply,
    ServerMessage,
)

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "HEADER_BYTES",
    "MAX_FRAME_BYTES_LIMIT",
    "Codec",
    "FrameReader",
    "decode_hello",
    "decode_hello_reply",
    "encode_hello",
    "frame",
]

DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
"""The largest payload accepted by default (16 MiB; BRIEF.md, "Wire")."""
HEADER_BYTES: Final = 4
"""The length prefix: a big-endian unsigned 32-bit integer."""
MAX_FRAME_BYTES_LIMIT: Final = 2**32 - 1
"""The largest payload a 4-byte header can announce."""

_HEADER = struct.Struct(">I")
# The consumed prefix of a FrameReader's buffer is dropped once it is at least this long and
# at least as long as what remains: every byte is then copied at most once more, so feeding
# many small frames stays linear, and small buffers are not compacted needlessly.
_COMPACT_BYTES = 64 * 1024

_T = TypeVar("_T")


# --------------------------------------------------------------------------- frames


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its 4-byte big-endian length.

    Raises:
        FrameTooLarge: the payload is longer than a 4-byte length can announce.
    """
    size = len(payload)
    if size > MAX_FRAME_BYTES_LIMIT:
        raise FrameTooLarge(size, MAX_FRAME_BYTES_LIMIT)
    return _HEADER.pack(size) + payload


class FrameReader:
    """Cuts a byte stream into frame payloads.

    Feed it whatever the socket returned, in any pieces, then take payloads out until
    :meth:`next_frame` returns None::

        reader.feed(await stream.receive_some())
        while (payload := reader.next_frame()) is not None:
            handle(codec.decode_request(payload))

    Args:
        max_frame_bytes: the largest payload accepted.

    Raises:
        ValueError: ``max_frame_bytes`` is negative or beyond what a header can announce.
    """

    __slots__ = ("_buffer", "_start", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if not 0 <= max_frame_bytes <= MAX_FRAME_BYTES_LIMIT:
            raise ValueError(
                f"max_frame_bytes must be between 0 and {MAX_FRAME_BYTES_LIMIT}, "
                f"got {max_frame_bytes}"
            )
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        # Payloads are cut from _start on; the prefix before it is consumed but not yet dropped.
        self._start = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes (any amount, including part of a header)."""
        self._buffer += data

    def next_frame(self) -> bytes | None:
        """The next complete payload, or None when more bytes are needed.

        Raises:
            FrameTooLarge: the next header announces more than ``max_frame_bytes``; raised as
                soon as the header is complete, before the body is awaited. The reader stays
                at that header, so the connection must be closed.
        """
        buffer = self._buffer
        start = self._start
        if len(buffer) - start < HEADER_BYTES:
            return None
        (size,) = _HEADER.unpack_from(buffer, start)
        if size > self.max_frame_bytes:
            raise FrameTooLarge(size, self.max_frame_bytes)
        end = start + HEADER_BYTES + size
        if len(buffer) < end:
            return None
        with memoryview(buffer) as view:
            payload = bytes(view[start + HEADER_BYTES : end])
        if end == len(buffer):
            buffer.clear()
            self._start = 0
        elif end >= _COMPACT_BYTES and end * 2 >= len(buffer):
            del buffer[:end]
            self._start = 0
        else:
            self._start = end
        return payload

    def buffered(self) -> int:
        """Bytes received and not yet returned as a payload (headers included)."""
        return len(self._buffer) - self._start


# --------------------------------------------------------------------------- encodings


class _RequestId(msgspec.Struct):
    """Reads only the ``id`` of a payload that failed validation, to echo it in the error."""

    id: int = -1


class _Format:
    """One encoding's shared msgspec machinery (encoders and decoders are reusable)."""

    __slots__ = ("decode_any", "decode_id", "encode", "name")

    def __init__(self, name: str, module: Any) -> None:
        self.name = name
        self.encode: Callable[[object], bytes] = module.Encoder(enc_hook=enc_hook).encode
        self.decode_any: Callable[[bytes], Any] = module.Decoder().decode
        self.decode_id: Callable[[bytes], _RequestId] = module.Decoder(_RequestId).decode

    def request_id(self, payload: bytes) -> int:
        """The integer ``id`` of a payload that is a map, else -1."""
        try:
            request_id = self.decode_id(payload).id
        except msgspec.DecodeError:  # not a map, or an id that is not an integer
            return -1
        # An id outside RequestId's range cannot be echoed in an ErrorReply.
        return request_id if 0 <= request_id <= 2**63 - 1 else -1


_JSON: Final = _Format("JSON", msgspec.json)
_MSGPACK: Final = _Format("msgpack", msgspec.msgpack)
_FORMATS: Final[dict[str, _Format]] = {"json": _JSON, "msgpack": _MSGPACK}
_HELLO_DECODER: Final[Callable[[bytes], Hello]] = msgspec.json.Decoder(Hello).decode
_HELLO_REPLY_DECODER: Final[Callable[[bytes], HelloReply | ErrorReply]] = msgspec.json.Decoder(
    HelloReply | ErrorReply
).decode
_REQUEST_DECODERS: Final[dict[str, Callable[[bytes], ClientMessage]]] = {
    "json": msgspec.json.Decoder(ClientMessage, dec_hook=dec_hook).decode,
    "msgpack": msgspec.msgpack.Decoder(ClientMessage, dec_hook=dec_hook).decode,
}
_REPLY_DECODERS: Final[dict[str, Callable[[bytes], ServerMessage]]] = {
    "json": msgspec.json.Decoder(ServerMessage, dec_hook=dec_hook).decode,
    "msgpack": msgspec.msgpack.Decoder(ServerMessage, dec_hook=dec_hook).decode,
}


# --------------------------------------------------------------------------- handshake


def encode_hello(msg: Hello | HelloReply | ErrorReply) -> bytes:
    """The JSON payload (not framed) of a handshake message.

    An :class:`ErrorReply` is what the daemon sends instead of a :class:`HelloReply` when it
    refuses the hello (then with ``id`` -1, and it closes the connection).
    """
    return _JSON.encode(msg)


def decode_hello(payload: bytes) -> Hello:
    """Read the client's first frame.

    Raises:
        MalformedFrame: the payload is not JSON.
        InvalidRequest: it is JSON but not a valid :class:`Hello` (a missing or unknown field,
            an unknown encoding, another ``msg``); ``request_id`` is -1.
    """
    return _decode(_HELLO_DECODER, payload, _JSON, Hello, echo_id=False)


def decode_hello_reply(payload: bytes) -> HelloReply | ErrorReply:
    """Read the daemon's first frame: a :class:`HelloReply`, or an :class:`ErrorReply` when the
    hello was refused.

    Raises:
        MalformedFrame: the payload is not JSON.
        InvalidRequest: it is JSON but neither message; ``request_id`` is -1.
    """
    return _decode(_HELLO_REPLY_DECODER, payload, _JSON, HelloReply | ErrorReply, echo_id=False)


# --------------------------------------------------------------------------- codec


class Codec:
    """Encodes and decodes the messages after the handshake, in one encoding.

    One per connection (it holds no state but its encoding); the msgspec encoders and typed
    decoders behind it are module-level and shared.

    Args:
        encoding: ``"msgpack"`` or ``"json"``, as the :class:`Hello` chose.

    Raises:
        ValueError: an unknown encoding.
    """

    __slots__ = ("_decode_reply", "_decode_request", "_format", "encoding")

    def __init__(self, encoding: Encoding) -> None:
        if encoding not in _FORMATS:
            raise ValueError(f"unknown encoding {encoding!r}; expected 'msgpack' or 'json'")
        self.encoding: Encoding = encoding
        self._format = _FORMATS[encoding]
        self._decode_request = _REQUEST_DECODERS[encoding]
        self._decode_reply = _REPLY_DECODERS[encoding]

    def __repr__(self) -> str:
        return f"Codec({self.encoding!r})"

    def encode(self, msg: ClientMessage | ServerMessage) -> bytes:
        """The payload (not framed) of a request, reply or event."""
        return self._format.encode(msg)

    def decode_request(self, payload: bytes) -> ClientMessage:
        """Read a client's request (the daemon's side).

        Raises:
            MalformedFrame: the payload is not msgpack/JSON at all; close the connection.
            InvalidRequest: it decodes but is not a valid request; answer with its
                ``request_id`` and ``path`` and keep the connection.
        """
        return _decode(self._decode_request, payload, self._format, ClientMessage)

    def decode_reply(self, payload: bytes) -> ServerMessage:
        """Read a daemon's reply or event (a client's side).

        Raises:
            MalformedFrame: the payload is not msgpack/JSON at all.
            InvalidRequest: it decodes but is not a valid reply.
        """
        return _decode(self._decode_reply, payload, self._format, ServerMessage)


# --------------------------------------------------------------------------- errors


def _decode(
    decode: Callable[[bytes], _T],
    payload: bytes,
    fmt: _Format,
    root: Any,
    *,
    echo_id: bool = True,
) -> _T:
    try:
        return decode(payload)
    except msgspec.ValidationError as exc:  # a DecodeError subclass: caught first
        invalid = str(exc)
    except msgspec.DecodeError as exc:
        raise _malformed(payload, fmt, exc) from None
    # msgspec validates while it parses, so a truncated payload can fail validation before
    # its end is reached: decoding it untyped tells a malformed frame from an invalid message
    # (and gives the raw value, walked to improve the path).
    try:
        raw = fmt.decode_any(payload)
    except msgspec.DecodeError as exc:
        raise _malformed(payload, fmt, exc) from None
    raise _invalid(invalid, payload, raw, fmt, root, echo_id=echo_id)


def _malformed(payload: bytes, fmt: _Format, exc: msgspec.DecodeError) -> MalformedFrame:
    return MalformedFrame(f"cannot decode a {len(payload)}-byte frame as {fmt.name}: {exc}")


def _invalid(
    text: str, payload: bytes, raw: Any, fmt: _Format, root: Any, *, echo_id: bool
) -> InvalidRequest:
    """Map msgspec's validation message about ``payload`` (``raw`` when decoded untyped),
    decoded as ``root``, to an InvalidRequest."""
    reason, path = split_validation_message(text)
    message = f"{reason} at {path}" if path else reason
    key_error = reason.endswith("(a key)")
    if path is not None and ("[...]" in path or key_error):
        path = _walk(raw, root, path + "[...]" if key_error else path)[0]
        message = f"{reason} at {path}"
    if path is not None and reason.startswith("Invalid value "):
        # A tag (``msg``, or an object's ``kind``) that names no struct: msgspec says
        # "Invalid value 'nope'"; say which names there are instead.
        parent_path, _, field = path.rpartition(".")
        parent = _walk(raw, root, parent_path)[1]
        tags = [
            _struct_tag(member)
            for member in _members(parent)
            if _is_struct(member) and member.__struct_config__.tag_field == field
        ]
        if tags:
            got = reason.removeprefix("Invalid value ")
            what = "message" if field == "msg" else field
            expected = f"'{tags[0]}'" if len(tags) == 1 else "one of " + ", ".join(tags)
            message = f"unknown {what} {got} at {path}; expected {expected}"
    request_id = fmt.request_id(payload) if echo_id else -1
    return InvalidRequest(message, request_id=request_id, path=path)


# --------------------------------------------------------------------------- path repair

_PATH_TOKEN = re.compile(r"\.(?P<field>[^.\[]+)|\[(?P<index>\d+)\]|\[(?P<any>\.\.\.)\]")


def _walk(raw: Any, tp: Any, path: str) -> tuple[str, Any]:
    """Follow a msgspec error path through the raw payload and the message types.

    Returns ``(path, type)``: the path with msgspec's ``[...]`` (an unnamed mapping entry)
    replaced by the key of the first entry that fails on its own (``requests['cpu']``, the form
    protocol/loader.py uses), and the declared type at its end. When anything does not line
    up: the path unchanged, and None.
    """
    out = "$"
    value: Any = raw
    position = 1
    while position < len(path):
        match = _PATH_TOKEN.match(path, position)
        if match is None:
            return path, None
        position = match.end()
        tp = _concrete(tp, value)
        if (field := match["field"]) is not None:
            if not (_is_struct(tp) and isinstance(value, dict)):
                return path, None
            fields = {f.encode_name: f.type for f in msgspec.structs.fields(tp)}
            if field not in fields:
                return path, None
            tp, value = fields[field], value.get(field)
            out += f".{field}"
        elif (index := match["index"]) is not None:
            args = get_args(_strip(tp))
            if not isinstance(value, list) or int(index) >= len(value) or not args:
                return path, None
            tp, value = args[0], value[int(index)]
            out += f"[{index}]"
        else:
            args = get_args(_strip(tp))
            if not isinstance(value, dict) or len(args) != 2:
                return path, None
            key = _first_bad_entry(value, args[0], args[1])
            if key is None:
                return path, None
            tp, value = args[1], value[key]
            out += f"[{key!r}]"
    return out, tp


def _first_bad_entry(mapping: dict[Any, Any], key_type: Any, value_type: Any) -> Any:
    for key, item in mapping.items():
        for candidate, tp in ((key, key_type), (item, value_type)):
            try:
                msgspec.convert(candidate, type=tp, dec_hook=dec_hook)
            except msgspec.ValidationError:
                return key
    return None


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _strip(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    """The members of a union (``None`` left out), or ``[tp]``."""
    tp = _strip(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [_strip(m) for m in get_args(tp) if m is not type(None)]
    return [tp]


def _struct_tag(tp: Any) -> str:
    return str(tp.__struct_config__.tag)


def _concrete(tp: Any, value: Any) -> Any:
    """The member of a (tagged) union that ``value`` was decoded as."""
    members = _members(tp)
    if len(members) == 1:
        return members[0]
    if isinstance(value, dict):
        structs = [m for m in members if _is_struct(m)]
        for member in structs:
            tag_field = member.__struct_config__.tag_field
            if tag_field is not None and value.get(tag_field) == member.__struct_config__.tag:
                return member
        mappings = [m for m in members if get_origin(m) is dict]
        return (structs or mappings or members)[0]
    if isinstance(value, list):
        return next((m for m in members if get_origin(m) is list), members[0])
    return members[0]
