"""Logging for the daemon: text for people, JSON lines for machines (``--log-format``).

Every Podium logger lives under ``podium.`` (podium.scheduler, podium.cache, ...). A JSON line
carries ``time`` (RFC 3339, UTC), ``level``, ``logger``, ``message`` and, for errors, ``exc``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Literal, TextIO

__all__ = ["JsonFormatter", "configure"]

_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        doc = {
            "time": f"{stamp}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


def configure(
    fmt: Literal["text", "json"] = "text",
    level: str = "info",
    *,
    stream: TextIO | None = None,
) -> None:
    """Send ``podium.*`` records at ``level`` and above to ``stream`` (stderr) in ``fmt``."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        formatter = logging.Formatter(_TEXT, "%Y-%m-%dT%H:%M:%SZ")
        formatter.converter = time.gmtime
        handler.setFormatter(formatter)
    logger = logging.getLogger("podium")
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False
