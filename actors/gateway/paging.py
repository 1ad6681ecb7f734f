"""Continue tokens: how a list read in pages resumes where its previous page ended.

Kubernetes counterpart: the API server's ``continue`` token (staging/src/k8s.io/apiserver/pkg/
storage/etcd3/store.go@v1.14 ``encodeContinue``/``decodeContinue``): opaque to the client, it
carries the list's revision and the key the next page starts after, so every page reads the
list as of its first page's revision.

A token is URL-safe base64 (unpadded) of a msgpack array: (format 1, the list's revision, kind,
last namespace, last name).
"""

from __future__ import annotations

import base64

import msgspec

from podium.protocol.wire import Get

__all__ = ["continue_token", "read_continue"]

_CONTINUE = msgspec.msgpack.Decoder(tuple[int, int, str, str, str])
"""A continue token: (format 1, the list's revision, kind, last namespace, last name)."""


def continue_token(revision: int, kind: str, last: tuple[str, str]) -> str:
    """The opaque token for the page after the one ending at ``last``."""
    raw = msgspec.msgpack.encode((1, revision, kind, *last))
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def read_continue(msg: Get) -> tuple[int, tuple[str, str]]:
    """The list's revision and the key its next page starts after.

    Raises:
        ValueError: the token is not one Podium made for this kind of list.
    """
    if msg.name:
        raise ValueError("a read by name is one object: it has no pages to continue")
    try:
        text = msg.continue_ + "=" * (-len(msg.continue_) % 4)
        version, revision, kind, namespace, name = _CONTINUE.decode(
            base64.urlsafe_b64decode(text.encode("ascii"))
        )
    except (ValueError, msgspec.DecodeError):
        raise ValueError(
            "not a continue token (pass the `continue` of the previous page's reply)"
        ) from None
    if version != 1 or revision < 0:
        raise ValueError("not a continue token this daemon made")
    if kind != msg.kind:
        raise ValueError(f"the continue token is for a list of {kind}, not of {msg.kind}")
    return revision, (namespace, name)
