"""The supervisor: every actor started in one nursery, wired by bounded mailboxes.

How a pod flows (README.md, "How it is built", has the whole picture)::

    gateway ──WriteObjects──▶ store ──Recovered/Committed──▶ cache, queue, watch hub
    scheduler: Pop ◀─ queue · SnapshotRequest ◀─ cache · FilterRequest ─▶ filter actor
               ─▶ score actor ─▶ Decision · Assume ─▶ cache · BindRequest ─▶ binder
    binder ──BindPods──▶ store ──Committed(Bound)──▶ cache (confirm), queue, watchers

Shutdown is a cascade of closed mailboxes, so work in flight drains in order: the caller stops
the scheduler and closes its handles; the filter actor, the score actor and the binder end
when their senders have gone (the binder after its last batch commits); the store ends when
nobody can write to it any more, and closes its published stream, which ends the cache and the
queue. Any actor that raises cancels the whole nursery, and the error reaches the caller with
its traceback (``podium serve`` then exits non-zero).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from podium.actors.binder.actor import Binder
from podium.actors.cache.actor import CacheActor
from podium.actors.cycle.extenders import Extenders, tls_problem
from podium.actors.cycle.filtering import FilterActor
from podium.actors.cycle.generic_scheduler import FilterStage, ScoreStage
from podium.actors.cycle.scheduler import PluginSet, Scheduler
from podium.actors.cycle.scoring import ScoreActor
from podium.actors.framework.interface import PluginArgs
from podium.actors.mail.messages import (
    Attempted,
    BinderMsg,
    CacheMsg,
    FilterMsg,
    Handles,
    QueueMsg,
    SchedulerMsg,
    ScoreMsg,
    SetFilters,
    SetScorers,
)
from podium.actors.plugins import names
from podium.actors.plugins.policy import build_plugins, default_policy, load_resolved_policy
from podium.actors.plugins.volume_binding import VolumeBinding
from podium.actors.queue.actor import QueueActor
from podium.actors.runtime.tracing import DISABLED, Tracing
from podium.protocol.config import SchedulerConfig
from podium.protocol.errors import PolicyError
from podium.protocol.extender import check_extenders, ignored_resources
from podium.store.actor import StoreActor
from podium.store.mail import Published, StoreMsg

__all__ = ["MAILBOX", "Handles", "Runtime", "StoreFactory", "load_plugin_set"]

log = logging.getLogger("podium.supervisor")

MAILBOX = 1024
"""Capacity of the hot-path mailboxes: large enough that ``send_nowait`` rarely meets a full
one (STYLE.md), small enough to push back on a flood."""

PEER_FAILURE_GRACE = 1.0
"""Seconds an actor whose peer's mailbox closed waits for that peer's failure to cancel the
actors before it reports the closed mailbox as an error of its own."""


StoreFactory = Callable[
    [trio.MemoryReceiveChannel[StoreMsg], Sequence[trio.MemorySendChannel[Published]]],
    StoreActor,
]
"""Builds the store actor (with its durability) from its inbox and its subscribers."""


def load_plugin_set(config: SchedulerConfig, policy_file: str | None = None) -> PluginSet:
    """Read the policy (``policy_file``, else the config's, else the default) into plugins.

    Raises:
        PolicyError: the policy file is unreadable or breaks a rule.
    """
    weight = config.hard_pod_affinity_symmetric_weight or 10
    path = policy_file or config.policy_file
    resolved = (
        load_resolved_policy(path, hard_pod_affinity_symmetric_weight=weight)
        if path
        else default_policy(hard_pod_affinity_symmetric_weight=weight)
    )
    if config.extenders:
        extenders = [*resolved.extenders, *config.extenders]
        if problems := check_extenders(extenders):
            raise PolicyError(problems, source=config.source)
        resolved = dataclasses.replace(resolved, extenders=tuple(extenders))
    tls = [
        (f"extenders[{i}].tlsConfig", why)
        for i, extender in enumerate(resolved.extenders)
        if (why := tls_problem(extender)) is not None
    ]
    if tls:
        raise PolicyError(tls, source=str(path or config.source or "<policy>"))
    filters, scorers = build_plugins(resolved)
    return PluginSet(
        filters=SetFilters(
            filters=filters,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            always_check_all_predicates=resolved.always_check_all_predicates,
        ),
        scorers=SetScorers(scorers=scorers),
        predicates=list(resolved.predicate_names),
        priorities=[(name, weight) for name, weight in resolved.priority_weights],
        warnings=list(resolved.warnings),
        volumes=VolumeBinding(PluginArgs(name=names.CHECK_VOLUME_BINDING)),
        extenders=tuple(resolved.extenders),
    )


class Runtime:
    """The scheduling actors and the store, supervised together.

    Args:
        config: the scheduler configuration.
        plugins: the policy to start with (see :func:`load_plugin_set`).
        store_factory: builds the store actor from its inbox and its subscribers.
        subscribers: more receivers of the store's published stream (the gateway's watch hub).
        reports: where the scheduler reports each attempt.
        reload_plugins: how the scheduler reads the policy again on ReloadPlugins.
        sync_binds, exit_when_idle, explain_attempts: ``podium simulate``'s modes (see
            Scheduler).
        tracing: traces of scheduling attempts (the scheduler's and the binder's spans).
        seed: the tie-break seed (None: the config's ``randomSeed``, else random).
    """

    def __init__(
        self,
        config: SchedulerConfig,
        plugins: PluginSet,
        store_factory: StoreFactory,
        *,
        subscribers: Sequence[trio.MemorySendChannel[Published]] = (),
        reports: trio.MemorySendChannel[Attempted] | None = None,
        reload_plugins: Callable[[], PluginSet] | None = None,
        sync_binds: bool = False,
        exit_when_idle: bool = False,
        explain_attempts: bool = False,
        tracing: Tracing = DISABLED,
        seed: int | None = None,
    ) -> None:
        self.config = config
        self.plugins = plugins
        self._store_factory = store_factory
        self._subscribers = list(subscribers)
        self._reports = reports
        self._reload_plugins = reload_plugins
        self._sync_binds = sync_binds
        self._exit_when_idle = exit_when_idle
        self._explain_attempts = explain_attempts
        self._tracing = tracing
        self._seed = seed if seed is not None else config.podium.random_seed
        self._scheduler: Scheduler | None = None
        self._actors: tuple[str, ...] = ()
        self._running: set[str] = set()

    def not_running(self) -> list[str]:
        """The actors started that are no longer running (readiness: ``/readyz``)."""
        return [name for name in self._actors if name not in self._running]

    def stop(self) -> None:
        """Begin a clean shutdown: no new scheduling cycles; the rest drains as its
        mailboxes close (the caller must close its :class:`Handles`)."""
        if self._scheduler is not None:
            self._scheduler.stop()

    async def run(
        self, *, task_status: trio.TaskStatus[Handles] = trio.TASK_STATUS_IGNORED
    ) -> None:
        cfg = self.config
        store_tx, store_rx = trio.open_memory_channel[StoreMsg](MAILBOX)
        cache_tx, cache_rx = trio.open_memory_channel[CacheMsg](MAILBOX)
        queue_tx, queue_rx = trio.open_memory_channel[QueueMsg](MAILBOX)
        filter_tx, filter_rx = trio.open_memory_channel[FilterMsg](MAILBOX)
        score_tx, score_rx = trio.open_memory_channel[ScoreMsg](MAILBOX)
        binder_tx, binder_rx = trio.open_memory_channel[BinderMsg](MAILBOX)
        control_tx, control_rx = trio.open_memory_channel[SchedulerMsg](math.inf)

        store = self._store_factory(
            store_rx, [cache_tx.clone(), queue_tx.clone(), *self._subscribers]
        )
        cache = CacheActor(
            cache_rx,
            assumed_pod_ttl_seconds=cfg.podium.assumed_pod_ttl_seconds,
            ignored_extended_resources=ignored_resources(self.plugins.extenders),
        )
        queue = QueueActor(
            queue_rx,
            scheduler_name=cfg.scheduler_name,
            pod_initial_backoff_seconds=cfg.pod_initial_backoff_seconds,
            pod_max_backoff_seconds=cfg.pod_max_backoff_seconds,
        )
        filters = self.plugins.filters
        extenders = Extenders(self.plugins.extenders)
        scorers = ScoreActor(
            score_rx,
            ScoreStage(self.plugins.scorers.scorers, rng=random.Random(self._seed)),
            self.plugins.volumes,
            extenders,
        )
        pool = FilterActor(
            filter_rx,
            score_tx.clone(),
            FilterStage(
                filters.filters,
                percentage_of_nodes_to_score=filters.percentage_of_nodes_to_score,
                always_check_all_predicates=filters.always_check_all_predicates,
            ),
            extenders=extenders,
        )
        binder = Binder(
            binder_rx,
            store=store_tx.clone(),
            cache=cache_tx.clone(),
            queue=queue_tx.clone(),
            tracing=self._tracing,
            extenders=extenders,
        )
        scheduler = Scheduler(
            control_rx,
            queue=queue_tx.clone(),
            cache=cache_tx.clone(),
            filter_actor=filter_tx.clone(),
            score_actor=score_tx.clone(),
            binder=binder_tx.clone(),
            store=store_tx.clone(),
            reports=self._reports,
            load_plugins=self._reload_plugins,
            sync_binds=self._sync_binds,
            exit_when_idle=self._exit_when_idle,
            explain_attempts=self._explain_attempts,
            tracing=self._tracing,
            filters=self.plugins.filters.filters,
            preemption=not cfg.disable_preemption,
            batch_max_pods=cfg.podium.batch_max_pods,
            batch_max_seconds=cfg.podium.batch_max_seconds,
            extenders=extenders,
        )
        self._scheduler = scheduler
        # Only clones are held by actors; the originals not handed to the caller close now.
        for channel in (filter_tx, score_tx, binder_tx):
            channel.close()
        actors: dict[str, Callable[..., Awaitable[None]]] = {
            "cache": cache.run,
            "queue": queue.run,
            "scoring workers": scorers.run,
            "filter pool": pool.run,
            "binder": binder.run,
            "scheduler": scheduler.run,
            "store": store.run,
        }
        async with extenders, trio.open_nursery() as nursery:
            for name, run in actors.items():
                await nursery.start(self._supervise, name, run, nursery.cancel_scope)
            self._actors = tuple(actors)
            task_status.started(
                Handles(store=store_tx, scheduler=control_tx, queue=queue_tx, cache=cache_tx)
            )

    async def _supervise(
        self,
        name: str,
        run: Callable[..., Awaitable[None]],
        actors: trio.CancelScope,
        *,
        task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run one actor, keeping :meth:`not_running` true to it.

        An actor that finds a peer's mailbox closed after a peer failed (the nursery is
        already cancelling) stops quietly: the peer's error is the cause, and reporting this
        one beside it turned a damaged database's exit 3 into a traceback and exit 1 (a send
        that does not block has no checkpoint, so it can run before the cancellation lands).
        """
        self._running.add(name)
        try:
            await run(task_status=task_status)
        except* (trio.BrokenResourceError, trio.ClosedResourceError):
            # except*: an actor with a nursery of its own (the scheduler) raises it in a group.
            if not actors.cancel_called:
                # The peer closes its mailbox as it fails, before its error reaches the nursery
                # (at the nursery's next checkpoint): give that a moment before calling this
                # one the cause (a deleted database's exit 3 was once an exit 1 so).
                await trio.sleep(PEER_FAILURE_GRACE)
            if not actors.cancel_called:
                raise
            log.debug("%s stopped: a peer's mailbox closed as the actors stop", name)
        finally:
            self._running.discard(name)
