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
    - bytes that are not msgpack/JSON at all (a msgpack string that is not UTF-8 included)
      raise :class:`MalformedFrame` (reply ``invalid`` with id -1, then close);
    - a payload that decodes but does not validate (``msgspec.ValidationError``: a wrong type, a
      missing field, an unknown ``msg``, a number no type holds such as ``1e999``) raises
      :class:`InvalidRequest` carrying the request's ``id`` when it could be read and the
      field's path; the connection stays open. So does a well-formed payload nested deeper
      than msgspec's recursion guard allows (about Python's recursion limit, 1000, less the
      caller's stack): its path is found by an iterative scan (:data:`NESTING_LIMIT`).
      Reasons and paths are cut short (about 1 KiB), whatever length the client sent.

Nothing else escapes :meth:`Codec.decode_request` (tests/property/test_fuzz_frames.py).
"""

from __future__ import annotations

import json
import math
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
from podium.protocol.nulls import absent_nulls
from podium.protocol.objects import KINDS, dec_hook, enc_hook, scoped_namespace
from podium.protocol.wire import (
    ClientMessage,
    Encoding,
    ErrorReply,
    Hello,
    HelloReply,
    ObjectError,
    ServerMessage,
)

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "HEADER_BYTES",
    "MAX_FRAME_BYTES_LIMIT",
    "NESTING_LIMIT",
    "Codec",
    "FrameReader",
    "decode_hello",
    "decode_hello_reply",
    "encode_hello",
    "frame",
]

DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
"""The largest payload accepted by default (16 MiB; docs/protocol.md, "Limits")."""
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
        except (msgspec.DecodeError, UnicodeDecodeError):  # not a map, or not an integer id
            return -1
        except RecursionError:  # nested too deep to skip: scan for the id instead
            return (_msgpack_nesting if self is _MSGPACK else _json_nesting)(payload)[1]
        return _echoable(request_id)

    def decode_lenient(self, payload: bytes) -> Any:
        """Decode untyped a payload whose untyped msgspec decoding failed validation.

        msgspec refuses numbers it cannot represent untyped (a JSON integer beyond 64 bits, a
        float beyond a double such as ``1e999``) although the document is well formed; the
        standard library reads those (as ``inf``), so the error's path can still be walked.
        msgpack has no such numbers: None (the path is then left as msgspec gave it).

        Raises:
            ValueError: the payload is not well-formed JSON after all.
        """
        if self is not _JSON:
            return None
        if payload.count(b"[") + payload.count(b"{") > NESTING_LIMIT:
            # Maybe deep: the standard library's parser recurses on the C stack, and under a
            # raised recursion limit (Hypothesis raises it) deep enough to overflow it.
            return None
        return json.loads(
            payload.decode("utf-8"),  # msgspec reads UTF-8 only; json would guess UTF-16/32
            parse_int=_lenient_int,
            parse_constant=_no_constant,  # NaN/Infinity are not JSON, as msgspec says
        )


def _echoable(request_id: int) -> int:
    """``request_id`` when an ErrorReply can echo it (RequestId's range), else -1."""
    return request_id if 0 <= request_id <= 2**63 - 1 else -1


def _lenient_int(text: str) -> int | float:
    # int() refuses more than 4300 digits (sys.get_int_max_str_digits); such a number is as
    # useless as infinity.
    return int(text) if len(text) <= 4000 else math.inf


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


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

    def invalid_reply(self, payload: bytes, exc: InvalidRequest) -> ErrorReply:
        """The ErrorReply to ``payload``, a request that did not validate (``exc``).

        A bad object of a put (``$.objects[N]...``) or a bad ref of a delete (``$.refs[N]...``)
        is answered as the store answers an object it refuses: one entry in ``errors`` with
        the object's index, kind, namespace and name as far as they could be read, and its
        ``path`` from the object; the reply's ``path`` stays the one from the request, as every
        reply's ``path`` is.
        """
        plain = ErrorReply(id=exc.request_id, code="invalid", message=exc.message, path=exc.path)
        found = _IN_OBJECT.fullmatch(exc.path or "")
        if found is None:
            return plain
        field, index, rest = found.group(1), int(found.group(2)), found.group(3)
        try:
            raw = self._format.decode_any(payload)
            item = raw[field][index]
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, LookupError, TypeError):
            return plain  # (not readable untyped: the request's error stands alone)
        if not isinstance(item, dict):
            return plain
        kind, namespace, name = _object_names(item, from_ref=field == "refs")
        reason = exc.message.replace(f" at {exc.path}", "", 1)
        ref = f"{kind.lower() or 'object'} {namespace + '/' if namespace else ''}{name or '<unnamed>'}"
        return ErrorReply(
            id=exc.request_id,
            code="invalid",
            message=f"{ref}: {reason}; nothing was written",
            path=exc.path,
            errors=[
                ObjectError(
                    index=index,
                    kind=kind,
                    namespace=namespace,
                    name=name,
                    path="$" + rest if rest else None,
                    message=reason,
                )
            ],
        )

    def decode_reply(self, payload: bytes) -> ServerMessage:
        """Read a daemon's reply or event (a client's side).

        Raises:
            MalformedFrame: the payload is not msgpack/JSON at all.
            InvalidRequest: it decodes but is not a valid reply.
        """
        return _decode(self._decode_reply, payload, self._format, ServerMessage)


# --------------------------------------------------------------------------- errors


_IN_OBJECT = re.compile(r"\$\.(objects|refs)\[(\d+)\](.*)", re.DOTALL)
"""A path into one object of a put (``objects``) or one ref of a delete (``refs``)."""


def _object_names(item: dict[str, Any], *, from_ref: bool) -> tuple[str, str, str]:
    """(kind, namespace, name) of an undecoded object or ref, as far as they read as strings;
    the namespace as the store keys it (defaulted for namespaced kinds, none for the others)."""

    def text(mapping: Any, key: str) -> str:
        value = mapping.get(key) if isinstance(mapping, dict) else None
        return value if isinstance(value, str) else ""

    kind = text(item, "kind")
    where = item if from_ref else item.get("metadata")
    namespace = text(where, "namespace")
    if kind in KINDS:
        namespace = scoped_namespace(kind, namespace)
    return kind, namespace, text(where, "name")


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
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        # (msgspec's msgpack decoder raises UnicodeDecodeError for a str that is not UTF-8.)
        raise _malformed(payload, fmt, exc) from None
    except RecursionError:
        # Nesting deeper than msgspec's recursion guard, in a field the types ignore (a typed
        # field fails on its type first). The frame itself is intact: answer, keep reading.
        raise _too_deep(payload, fmt, echo_id=echo_id) from None
    # msgspec validates while it parses, so a truncated payload can fail validation before
    # its end is reached: decoding it untyped tells a malformed frame from an invalid message
    # (and gives the raw value, walked to improve the path).
    raw: Any = None
    try:
        raw = fmt.decode_any(payload)
    except msgspec.ValidationError:
        # Well formed but for a number msgspec cannot hold untyped (1e999, a 30-digit
        # integer): the typed error stands, and the standard library can still tell a
        # truncated payload.
        try:
            raw = fmt.decode_lenient(payload)
        except RecursionError:
            pass
        except ValueError as exc:
            raise MalformedFrame(
                f"cannot decode a {len(payload)}-byte frame as {fmt.name}: {exc}"
            ) from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise _malformed(payload, fmt, exc) from None
    except RecursionError:
        pass  # the typed error stands; its path is left as msgspec gave it
    if raw is not None and (fixed := absent_nulls(raw, root)) is not raw:
        # A Kubernetes object's null read as the API server reads it (protocol/nulls.py), as
        # a file's is: only a message msgspec refused is walked, the rest pays nothing.
        try:
            converted: _T = msgspec.convert(fixed, type=root, dec_hook=dec_hook)
        except msgspec.ValidationError as exc:
            invalid, raw = str(exc), fixed
        else:
            return converted
    raise _invalid(invalid, payload, raw, fmt, root, echo_id=echo_id)


def _malformed(
    payload: bytes, fmt: _Format, exc: msgspec.DecodeError | UnicodeDecodeError
) -> MalformedFrame:
    return MalformedFrame(f"cannot decode a {len(payload)}-byte frame as {fmt.name}: {exc}")


def _invalid(
    text: str, payload: bytes, raw: Any, fmt: _Format, root: Any, *, echo_id: bool
) -> InvalidRequest:
    """Map msgspec's validation message about ``payload`` (``raw`` when decoded untyped),
    decoded as ``root``, to an InvalidRequest."""
    reason, path = split_validation_message(text)
    # msgspec quotes the offending value: a client's megabyte-long string is not echoed whole.
    reason = _clip(reason)
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
    if path is not None and len(path) > _MAX_PATH:
        # An unknown field's name comes from the client and may be megabytes long.
        short = _clip(path, _MAX_PATH)
        message, path = message.replace(path, short), short
    request_id = fmt.request_id(payload) if echo_id else -1
    return InvalidRequest(message, request_id=request_id, path=path)


_MAX_PATH = 512
"""The longest path an error carries."""
_MAX_REASON = 1024
"""The longest reason an error carries (msgspec's text, with the offending value quoted)."""
_MAX_KEY = 64
"""The longest mapping key a repaired path spells out."""


def _clip(text: str, limit: int = _MAX_REASON) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def _too_deep(payload: bytes, fmt: _Format, *, echo_id: bool) -> InvalidRequest:
    """The InvalidRequest for a payload nested deeper than msgspec decodes."""
    scan = _msgpack_nesting if fmt is _MSGPACK else _json_nesting
    path, request_id = scan(payload)
    where = f" at {path}" if path is not None else ""
    return InvalidRequest(
        f"the {fmt.name} payload nests deeper than the decoder allows (more than "
        f"{NESTING_LIMIT} levels{where}); no message is that deep",
        request_id=request_id if echo_id else -1,
        path=path,
    )


# --------------------------------------------------------------------------- nesting scans
#
# msgspec decodes recursively and raises RecursionError (no path, no id) on nesting deeper
# than Python's recursion limit. These iterative scans find where a payload first nests
# deeper than NESTING_LIMIT, and its top-level integer ``id``. They stop at the end of the
# root value, at bytes that make no sense, or after _SCAN_ITEMS items (a few tens of
# milliseconds; an ``id`` further on is not found).

NESTING_LIMIT: Final = 100
"""Nesting beyond this is reported as too deep (a put's deepest field is about 12 levels)."""
_PATH_SEGMENTS = 12  # a too-deep path is reported down to here: enough to name the field
_SCAN_ITEMS = 1 << 15
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Open:
    """A container the scan is inside: a map's last key, or an array's next index."""

    __slots__ = ("index", "is_map", "key", "remaining")

    def __init__(self, is_map: bool, remaining: int = -1) -> None:
        self.is_map = is_map
        self.index = 0  # entries seen (a map counts keys and values)
        self.key: object = None
        self.remaining = remaining  # msgpack: items still to come


def _segment(top: _Open) -> str:
    """The path segment of the next value in ``top``."""
    if not top.is_map:
        return f"[{top.index}]"
    key = top.key
    if isinstance(key, str) and _IDENTIFIER.fullmatch(key) and len(key) <= _MAX_KEY:
        return f".{key}"
    return f"[{_short_key(key)}]"


def _short_key(key: object) -> str:
    """``repr(key)``; a long string key as the quoted start of it and ``...``."""
    text = repr(key)
    if len(text) <= _MAX_KEY:
        return text
    if isinstance(key, str):
        return f"{key[: _MAX_KEY - 8]!r}..."
    return f"{text[: _MAX_KEY - 3]}..."


def _deep_path(segments: list[str]) -> str:
    return "$" + "".join(segments[:_PATH_SEGMENTS])


def _json_nesting(payload: bytes) -> tuple[str | None, int]:
    stack: list[_Open] = []
    segments: list[str] = []  # one per open container but the root
    deep: str | None = None
    request_id = -1
    for count, match in enumerate(_JSON_TOKEN.finditer(payload)):
        if count >= _SCAN_ITEMS:
            break
        token = match[0]
        top = stack[-1] if stack else None
        if token in (b"{", b"["):
            if top is not None:
                segments.append(_segment(top))
            stack.append(_Open(token == b"{"))
            if deep is None and len(stack) > NESTING_LIMIT:
                deep = _deep_path(segments)
        elif token in (b"}", b"]"):
            if not stack:
                break
            stack.pop()
            if segments and stack:
                segments.pop()
        elif top is None:
            break
        elif token == b",":
            top.index += 1  # the next element; in a map, from a value to the next key
        elif token == b":":
            pass
        elif top.is_map and top.index % 2 == 0:
            top.key = _json_key(token)
            top.index += 1  # odd: the key's value comes next
        elif len(stack) == 1 and top.is_map and top.key == "id" and token.isdigit():
            request_id = _echoable(int(token)) if len(token) <= 20 else -1
    return deep, request_id


def _json_key(token: bytes) -> object:
    try:
        return json.loads(token)
    except ValueError:
        return token.decode("utf-8", "replace")


# msgpack headers 0xc0-0xdf: (what, width of the length or value).
_MSGPACK_HEADS: Final[dict[int, tuple[str, int]]] = {
    0xC0: ("skip", 0),
    0xC2: ("skip", 0),
    0xC3: ("skip", 0),
    0xC4: ("bin", 1),
    0xC5: ("bin", 2),
    0xC6: ("bin", 4),
    0xC7: ("ext", 1),
    0xC8: ("ext", 2),
    0xC9: ("ext", 4),
    0xCA: ("skip", 4),
    0xCB: ("skip", 8),
    0xCC: ("uint", 1),
    0xCD: ("uint", 2),
    0xCE: ("uint", 4),
    0xCF: ("uint", 8),
    0xD0: ("int", 1),
    0xD1: ("int", 2),
    0xD2: ("int", 4),
    0xD3: ("int", 8),
    0xD4: ("skip", 2),
    0xD5: ("skip", 3),
    0xD6: ("skip", 5),
    0xD7: ("skip", 9),
    0xD8: ("skip", 17),
    0xD9: ("str", 1),
    0xDA: ("str", 2),
    0xDB: ("str", 4),
    0xDC: ("array", 2),
    0xDD: ("array", 4),
    0xDE: ("map", 2),
    0xDF: ("map", 4),
}
_CONTAINER: Final = object()


def _msgpack_nesting(payload: bytes) -> tuple[str | None, int]:
    stack: list[_Open] = []
    segments: list[str] = []  # one per open container but the root
    deep: str | None = None
    request_id = -1
    pos, size = 0, len(payload)
    for _ in range(_SCAN_ITEMS):
        if pos >= size:
            break
        head = payload[pos]
        pos += 1
        item: object = None
        entries = -1  # a container's items (a map's keys and values)
        if head <= 0x7F:
            item = head
        elif head <= 0x8F:
            entries = 2 * (head & 0x0F)
        elif head <= 0x9F:
            entries = head & 0x0F
        elif head <= 0xBF:
            end = pos + (head & 0x1F)
            item, pos = payload[pos:end], end
        elif head >= 0xE0:
            item = head - 0x100
        else:
            what, width = _MSGPACK_HEADS.get(head, ("bad", 0))
            if what == "bad" or pos + width > size:
                break
            number = int.from_bytes(payload[pos : pos + width], "big", signed=what == "int")
            if what == "skip":
                pos += width
            elif what in ("uint", "int"):
                pos += width
                item = number
            elif what in ("bin", "str", "ext"):
                pos += width + number + (1 if what == "ext" else 0)
                item = payload[pos - number : pos] if what == "str" else None
            else:
                pos += width
                entries = 2 * number if what == "map" else number
        if pos > size:
            break
        top = stack[-1] if stack else None
        if entries > 0:
            if top is not None:
                segments.append(_segment(top))
            stack.append(_Open(head in (0xDE, 0xDF) or 0x80 <= head <= 0x8F, entries))
            if deep is None and len(stack) > NESTING_LIMIT:
                deep = _deep_path(segments)
            continue
        if entries == 0:
            item = _CONTAINER
        # One item is complete: account for it in its container, closing the full ones.
        while stack:
            top = stack[-1]
            if top.is_map and top.index % 2 == 0:
                top.key = _msgpack_key(item)
            elif len(stack) == 1 and top.is_map and top.key == "id" and isinstance(item, int):
                request_id = _echoable(item)
            top.index += 1
            top.remaining -= 1
            if top.remaining > 0:
                break
            stack.pop()
            if segments and stack:
                segments.pop()
            item = _CONTAINER
        else:
            break  # the root is complete
    return deep, request_id


def _msgpack_key(item: object) -> object:
    if isinstance(item, bytes):
        try:
            return item.decode("utf-8")
        except UnicodeDecodeError:
            return item
    return "..." if item is _CONTAINER else item


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
            out += f"[{_short_key(key)}]"
    return out, tp


def _first_bad_entry(mapping: dict[Any, Any], key_type: Any, value_type: Any) -> Any:
    for key, item in mapping.items():
        for candidate, tp in ((key, key_type), (item, value_type)):
            try:
                msgspec.convert(candidate, type=tp, dec_hook=dec_hook)
            except (msgspec.ValidationError, RecursionError):
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
