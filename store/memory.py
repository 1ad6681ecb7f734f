"""The store without durability: the :class:`~podium.store.actor.StoreActor` over
:class:`InMemory`, which keeps nothing beyond the core.

``podium simulate`` and the actor tests use it: a commit is immediate, nothing is recovered
(the core is served as it was given), and the event log is the core's own (a watcher behind it
gets ``gone``).
"""

from __future__ import annotations

from collections.abc import Sequence

import trio

from podium.store.actor import Recovery, StoreActor, Subscriber
from podium.store.core import StoreCore
from podium.store.mail import Change, StoreMsg

__all__ = ["InMemory", "memory_store"]


class InMemory:
    """A :class:`~podium.store.actor.Durability` that keeps nothing: every commit is
    immediate and nothing survives the process."""

    keeps_log = False

    async def load(self) -> Recovery | None:
        """Nothing is kept, so nothing is recovered."""
        return None

    async def commit(self, changes: list[Change]) -> None:
        """Committed as soon as the core holds the changes."""

    async def read_events(self, after: int, limit: int = 0) -> tuple[int | None, list[Change]]:
        """An empty log: there is none beyond the core's (never asked, as ``keeps_log`` is
        False)."""
        return None, []

    async def close(self) -> None:
        """Nothing to release."""


def memory_store(
    inbox: trio.MemoryReceiveChannel[StoreMsg],
    subscribers: Sequence[Subscriber],
    core: StoreCore | None = None,
) -> StoreActor:
    """The store actor holding :class:`InMemory` durability, with no group commit window.

    Args:
        inbox: its mailbox; the store stops when every sender has closed it.
        subscribers: who receives Recovered and every Committed; closed when the store stops.
        core: the state to serve (a fresh, empty one by default).
    """
    return StoreActor(inbox, subscribers, InMemory(), core=core)
