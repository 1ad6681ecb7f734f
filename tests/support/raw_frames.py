"""Frames written and read by hand over a blocking socket, for end-to-end tests that speak the
protocol byte by byte (docs/protocol.md, "Frames": a 4-byte big-endian length, then the payload).

Written here rather than taken from protocol/framing.py, so that a test of the daemon's framing
does not share the daemon's own encoder.
"""

from __future__ import annotations

import socket
import struct

__all__ = ["frame", "recv_frame"]


def frame(payload: bytes) -> bytes:
    """``payload`` behind its length prefix."""
    return struct.pack(">I", len(payload)) + payload


def recv_frame(sock: socket.socket) -> bytes | None:
    """The next frame's payload, or ``None`` when the peer closed before a whole one came."""
    header = b""
    while len(header) < 4:
        chunk = sock.recv(4 - len(header))
        if not chunk:
            return None
        header += chunk
    (size,) = struct.unpack(">I", header)
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return body
