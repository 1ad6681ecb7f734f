"""The JSON Schema (draft 2020-12) of every wire message, for clients in other languages.

``podium protocol schema`` prints :func:`protocol_schema`. The document is generated from the
msgspec types of :mod:`podium.protocol.wire` and :mod:`podium.protocol.objects`, so it cannot
drift from what the daemon decodes. Its shape::

    {
      "$schema": "https://json-schema.org/draft/2020-12/schema",
      "$id", "title", "description",
      "oneOf": [{"$ref": "#/$defs/Hello"}, {"$ref": "#/$defs/HelloReply"},
                {"$ref": "#/$defs/ClientMessage"}, {"$ref": "#/$defs/ServerMessage"}],
      "$defs": {
        "Hello", "HelloReply",             the handshake (always JSON)
        "ClientMessage", "ServerMessage",  oneOf the requests / replies, by "msg"
        "Put", "GetReply", "Pod", ...      every struct, by class name
        "Quantity"                         a resource quantity
      }
    }

It describes the JSON encoding; the msgpack encoding carries the same maps. Quantities
(``resources.requests.cpu``) are strings in the Kubernetes quantity grammar or non-negative
numbers. Kubernetes objects ignore fields Podium does not read, so their schemas allow
additional properties; :class:`~podium.protocol.wire.Hello` forbids them.

This module imports no validator: ``jsonschema`` is a test dependency only.
"""

from __future__ import annotations

import copy
from typing import Any, Final

import msgspec

from podium.protocol.quantity import Quantity
from podium.protocol.wire import PROTOCOL_VERSION, ClientMessage, Hello, HelloReply, ServerMessage

__all__ = ["ENTRY_POINTS", "QUANTITY_PATTERN", "SCHEMA_ID", "protocol_schema"]

SCHEMA_ID: Final = f"https://podium.invalid/schemas/protocol-v{PROTOCOL_VERSION}.json"
"""The document's ``$id``: an identifier, not a location to fetch."""

ENTRY_POINTS: Final = ("Hello", "HelloReply", "ClientMessage", "ServerMessage")
"""The names in ``$defs`` that describe a whole frame."""

QUANTITY_PATTERN: Final = (
    r"^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[mkMGTPE])?$"
)
"""The Kubernetes quantity grammar (protocol/quantity.py) as an ECMA-262 regex, without the
minus sign: Podium refuses negative quantities."""

_DESCRIPTIONS: Final = {
    "ClientMessage": "Any request a client sends after the handshake, told apart by `msg`.",
    "ServerMessage": (
        "Any frame the daemon sends after the handshake (a reply, an event or an error), "
        "told apart by `msg`."
    ),
}


_QUANTITY_SCHEMA: Final = {
    "title": "Quantity",
    "description": (
        "A Kubernetes resource quantity: a string such as '100m', '1.5', '1Gi', '2e3', or a "
        "non-negative JSON number. Echoed back as the text it was written as."
    ),
    "anyOf": [
        {"type": "string", "pattern": QUANTITY_PATTERN},
        {"type": "number", "minimum": 0},
    ],
}


def _schema_hook(type_: type) -> dict[str, Any]:
    if type_ is Quantity:
        return {"$ref": "#/$defs/Quantity"}
    raise NotImplementedError(f"no JSON Schema for {type_!r}")


def protocol_schema() -> dict[str, Any]:
    """One JSON Schema document describing every message of protocol version 1.

    Returns:
        A fresh dict (callers may change it): top-level ``oneOf`` over the four entry points
        (:data:`ENTRY_POINTS`), each a name in ``$defs``; ``ClientMessage`` and
        ``ServerMessage`` are ``oneOf`` the message structs, discriminated by ``msg``.
    """
    (_, _, client, server), components = msgspec.json.schema_components(
        (Hello, HelloReply, ClientMessage, ServerMessage),
        schema_hook=_schema_hook,
        ref_template="#/$defs/{name}",
    )
    defs: dict[str, Any] = dict(components)
    for name in ("Quantity", "ClientMessage", "ServerMessage"):
        if name in defs:  # pragma: no cover - a struct would have to be named so
            raise RuntimeError(f"a wire struct is named {name}; its schema entry would clash")
    defs["Quantity"] = copy.deepcopy(_QUANTITY_SCHEMA)
    # ObjectMeta.__post_init__: a name, or a generateName for the store to fill one from.
    defs["ObjectMeta"]["anyOf"] = [{"required": ["name"]}, {"required": ["generateName"]}]
    for name, union in (("ClientMessage", client), ("ServerMessage", server)):
        defs[name] = {
            "title": name,
            "description": _DESCRIPTIONS[name],
            # msgspec writes anyOf; the "msg" tags make the members exclusive, so say oneOf.
            "oneOf": union["anyOf"],
            "discriminator": union["discriminator"],
        }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"Podium wire protocol, version {PROTOCOL_VERSION}",
        "description": (
            "Every frame of the Podium client/daemon protocol, JSON encoding (msgpack frames "
            "carry the same maps). Frames are a 4-byte big-endian length and a payload; the "
            "first frame each way is a Hello / HelloReply in JSON. See docs/protocol.md."
        ),
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in ENTRY_POINTS],
        "$defs": defs,
    }
