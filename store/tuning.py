"""The store's tuning, one set for both durabilities (SQLite and etcd).

Each constant means the same thing whichever backend holds the store: the store actor's
group commit window and in-memory log (:func:`~podium.store.sqlite.sqlite_store`,
:func:`~podium.store.etcd.durability.etcd_store`), how far the durable event log may grow past
its retention before it is cut back, and how much of it is checked at start. What only one
backend has stays with it (SQLite's GIL switch interval and ``quick_check`` bound, etcd's
range page sizes).

The modules read these as ``tuning.NAME`` at the point of use, so a test that patches one of
them here patches it for both backends.
"""

from __future__ import annotations

__all__ = [
    "COMMIT_WINDOW_SECONDS",
    "COMPACT_EVERY",
    "EVENTS_CHECKED_AT_START",
    "EVENT_RETENTION_REVISIONS",
    "MEMORY_LOG",
]

MEMORY_LOG = 65_536
"""Changes the core keeps in memory for watchers resuming close behind; older revisions are
read from the durable log, which keeps ``eventRetentionRevisions`` of them."""

COMMIT_WINDOW_SECONDS = 0.005
"""Group commit: a batch begins at least this long after the previous one, so that writes
arriving meanwhile share its transaction (each hand-over to the database thread, or each etcd
transaction, is a round trip)."""

COMPACT_EVERY = 1024
"""Compact the event log when it has grown this far past the retention (amortised deletes)."""

EVENTS_CHECKED_AT_START = 1000
"""The newest events decoded at start (a bounded check: the log may hold a million; an older
one that does not decode is reported when a watcher reads it)."""

EVENT_RETENTION_REVISIONS = 1_000_000
"""How many changes the durable event log keeps by default (``eventRetentionRevisions``)."""
