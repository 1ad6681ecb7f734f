"""The gateway's protocol counters, with their label children bound once.

``podium_protocol_requests_total{type}`` counts each request by its wire tag;
``podium_protocol_errors_total{type, code}`` each error answered, ``type`` being the request's
tag, or ``frame`` for a frame or hello that could not be read or a request that did not decode,
or ``watch`` for a watch refused or ended (protocol/metrics.py defines both).
"""

from __future__ import annotations

from prometheus_client import Counter

from podium.protocol import metrics
from podium.protocol.wire import ClientMessage

__all__ = ["count_error", "count_request", "request_type"]

_REQUESTS: dict[str, Counter] = {}
_ERRORS: dict[tuple[str, str], Counter] = {}


def request_type(msg: ClientMessage) -> str:
    """The request's wire tag (``put``, ``watch``, ...), the ``type`` label."""
    return str(type(msg).__struct_config__.tag)


def count_request(kind: str) -> None:
    """Count one request of wire tag ``kind``."""
    child = _REQUESTS.get(kind)
    if child is None:
        child = _REQUESTS[kind] = metrics.PROTOCOL_REQUESTS.labels(type=kind)
    child.inc()


def count_error(kind: str, code: str) -> None:
    """Count one error answered with ``code`` to a request of type ``kind``."""
    child = _ERRORS.get((kind, code))
    if child is None:
        child = _ERRORS[kind, code] = metrics.PROTOCOL_ERRORS.labels(type=kind, code=code)
    child.inc()
