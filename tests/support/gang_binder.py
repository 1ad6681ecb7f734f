"""The process tests/e2e/test_gang_crash.py kills: random pod groups bound through the real
store actor (SQLite or etcd, as the daemon builds it) until ``kill -9``.

Run as ``python gang_binder.py STORE_URL RUN SEED`` (or forked by ``--fork-server``,
:func:`fork_server`, as the test does). It opens the store, writes the nodes when
the store is new, prints ``ready``, then two workers loop (so the store's batches often hold
both workers' messages, as the daemon's group commit does). Each round writes the pods of one
to three new groups (namespace ``g``, label ``gang=<group>``; half of them with a claim and a
volume a member; now and then one of 128 or 256 members, past etcd's ``--max-txn-ops``) and a lone pod, sometimes deletes a member of one group, then binds them all
in one BindPods. Every line is flushed as it is printed:

- ``binding G N``: the bind of group G (N members) is handed to the store;
- ``bound G``: the store answered it committed (the answer comes only after the commit);
- ``refused G``: every member of G was refused (one was deleted);
- ``VIOLATION ...``: an answer that breaks the contract (a group partly failed).

Group names carry RUN, so no two runs share one.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

import trio
from builders import make_node, make_pod

from podium.protocol import objects as o
from podium.protocol.wire import ObjectRef
from podium.store.actor import StoreActor
from podium.store.etcd.durability import EtcdDurability, etcd_store
from podium.store.location import EtcdLocation, SqliteLocation, parse_store_url
from podium.store.mail import (
    Binding,
    BindPods,
    BindResult,
    StoreMsg,
    WriteObjects,
    WriteResult,
)
from podium.store.sqlite import SqliteDurability, sqlite_store

NAMESPACE = "g"
NODES = 8
SIZES = (1, 2, 3, 4, 6, 8, 16)
LARGE = (128, 256)
"""Sizes drawn once in a while: past etcd's --max-txn-ops (128) with their event keys."""


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _store(url: str, inbox: trio.MemoryReceiveChannel[StoreMsg]) -> StoreActor:
    location = parse_store_url(url)
    if isinstance(location, SqliteLocation):
        return sqlite_store(inbox, [], SqliteDurability(location.path))
    assert isinstance(location, EtcdLocation)
    return etcd_store(inbox, [], EtcdDurability(location))


def _pv(name: str) -> o.PersistentVolume:
    return o.PersistentVolume(metadata=o.ObjectMeta(name=name))


def _pvc(name: str) -> o.PersistentVolumeClaim:
    return o.PersistentVolumeClaim(metadata=o.ObjectMeta(name=name, namespace=NAMESPACE))


async def _ask(inbox: trio.MemorySendChannel[StoreMsg], make: Callable[[Any], StoreMsg]) -> object:
    """Send the message ``make`` builds around a reply channel; its answer."""
    tx, rx = trio.open_memory_channel[object](1)
    await inbox.send(make(tx))
    return await rx.receive()


async def _worker(
    inbox: trio.MemorySendChannel[StoreMsg], run: int, worker: int, rng: random.Random
) -> None:
    for round_ in range(1_000_000):
        groups: dict[str, list[str]] = {}
        claims: dict[str, str] = {}  # pod -> its claim (and volume, of the same name)
        puts: list[o.KubeObject] = []
        for g in range(rng.randint(1, 3)):
            # Half the runs begin with a large group (a kill soon after the start often lands
            # in its commit), and one in fifty later groups is one.
            odds = 0.5 if round_ == g == worker == 0 else 0.02
            size = rng.choice(LARGE) if rng.random() < odds else rng.choice(SIZES)
            group = f"r{run}-w{worker}-{round_}-{g}"
            with_volumes = rng.random() < 0.5
            members = groups[group] = []
            for m in range(size):
                name = f"{group}-m{m}"
                pod = make_pod(name).ns(NAMESPACE).label("gang", group).req(cpu="1m")
                if with_volumes:
                    claims[name] = name
                    puts += [_pv(name), _pvc(name)]
                    pod = pod.pvc(name)
                puts.append(pod.obj())
                members.append(name)
        lone = f"r{run}-w{worker}-{round_}-lone"
        puts.append(make_pod(lone).ns(NAMESPACE).obj())
        written = await _ask(inbox, lambda r: WriteObjects(puts=puts, reply=r))  # noqa: B023
        assert isinstance(written, WriteResult), written
        uids = {s.name: s.uid for s in written.objects if s.kind == "Pod"}
        doomed = ""
        if rng.random() < 0.2:
            doomed = rng.choice(list(groups))
            victim = rng.choice(groups[doomed])
            ref = ObjectRef(kind="Pod", namespace=NAMESPACE, name=victim)
            gone = await _ask(inbox, lambda r: WriteObjects(deletes=[ref], reply=r))  # noqa: B023
            assert isinstance(gone, WriteResult), gone
        bindings = [
            Binding(
                namespace=NAMESPACE,
                name=name,
                uid=uids[name],
                node=f"n{rng.randrange(NODES)}",
                volumes={f"{NAMESPACE}/{claims[name]}": claims[name]} if name in claims else {},
                group=f"{NAMESPACE}/{group}",
            )
            for group, members in groups.items()
            for name in members
        ]
        bindings.insert(
            rng.randrange(len(bindings) + 1),
            Binding(namespace=NAMESPACE, name=lone, uid=uids[lone], node="n0"),
        )
        for group, members in groups.items():
            _say(f"binding {group} {len(members)}")
        result = await _ask(inbox, lambda r: BindPods(bindings=bindings, reply=r))  # noqa: B023
        assert isinstance(result, BindResult), result
        failed: dict[str, int] = {}
        for failure in result.failed:
            failed[failure.binding.group] = failed.get(failure.binding.group, 0) + 1
        for group, members in groups.items():
            refused = failed.get(f"{NAMESPACE}/{group}", 0)
            if refused == 0 and group != doomed:
                _say(f"bound {group}")
            elif refused == len(members) and group == doomed:
                _say(f"refused {group}")
            else:
                _say(f"VIOLATION {group}: {refused} of {len(members)} refused ({doomed=})")


async def main(url: str, run: int, seed: int) -> None:
    rng = random.Random(seed)
    inbox_tx, inbox_rx = trio.open_memory_channel[StoreMsg](64)
    store = _store(url, inbox_rx)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        if store.core.revision == 0:
            nodes = [
                make_node(f"n{i}").capacity(cpu="1000", pods=100_000).obj() for i in range(NODES)
            ]
            await _ask(inbox_tx, lambda r: WriteObjects(puts=nodes, reply=r))
        _say("ready")
        async with inbox_tx, trio.open_nursery() as workers:
            for worker in range(2):
                workers.start_soon(
                    _worker, inbox_tx.clone(), run, worker, random.Random(rng.random())
                )


def _die_with_parent() -> None:
    """SIGKILL when the parent dies, so that no binder outlives its test."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def fork_server() -> None:
    """``--fork-server``: import once, then start each binder as a fork of this process (a
    Python start costs the test more than the whole run of a binder). Commands on stdin, one
    a line; answers on stdout:

    - ``run URL RUN SEED OUT``: fork a binder (:func:`main`) printing to the file OUT (its
      stderr to ``OUT.err``); answers ``pid PID``;
    - ``kill PID``: SIGKILL it and reap it; answers ``dead STATUS`` (``os.waitpid``'s).

    The binder forked is a process of its own (its store, threads and trio run begin after
    the fork) and dies with this server (``PR_SET_PDEATHSIG``). The server ends when its
    stdin does, so when the test does: not by ``PR_SET_PDEATHSIG`` itself, which follows the
    thread that started it, and trio starts a process from a worker thread that ends when idle.
    """
    _say("forks")
    for line in sys.stdin:
        command, *args = line.split()
        if command == "run":
            url, run, seed, out = args
            pid = os.fork()
            if pid == 0:  # the binder: it never returns to this loop
                try:
                    _die_with_parent()
                    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
                    os.dup2(os.open(out + ".err", os.O_WRONLY | os.O_CREAT, 0o600), 2)
                    os.close(0)
                    trio.run(main, url, int(run), int(seed))
                except BaseException:
                    traceback.print_exc()
                    sys.stderr.flush()
                    os._exit(1)
                os._exit(0)
            _say(f"pid {pid}")
        elif command == "kill":
            pid = int(args[0])
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            _say(f"dead {status}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--fork-server"]:
        fork_server()
    else:
        trio.run(main, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
