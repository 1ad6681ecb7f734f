"""Run ``podium ARGS`` with a SIGINT handled at one exact point: the process behind
tests/e2e/test_lost_ctrl_c.py.

Usage: ``python lost_interrupt.py MOMENT ARGS...``, where MOMENT is one of :data:`MOMENTS`.

``signal.raise_signal`` runs the C-level handler at once; Python runs the Python-level one (the
default ``KeyboardInterrupt``, or trio's) at the next instruction, so the interrupt lands exactly
where a real Ctrl-C lands only by bad luck under load:

- inside a weakref callback, where the interpreter prints ``Exception ignored in`` and drops
  the ``KeyboardInterrupt`` (importlib's module-lock callback, as seen in a hung ``podium
  watch``), before ``trio.run`` or inside it;
- inside the connection's reader task while the main task waits for a reply, where it used
  to end the connection as if the daemon had closed it (a warning line, then exit 130).
"""

from __future__ import annotations

import signal
import sys
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["MOMENTS", "interrupt_in_weakref_callback"]


_FIRED: list[bool] = []


class _Dropped:
    """An object whose death runs a weakref callback."""


def interrupt_in_weakref_callback() -> None:
    """SIGINT, with its Python handler run inside a weakref callback (once a process: the
    patched function may be called again, by a retry)."""
    if _FIRED:
        return
    _FIRED.append(True)

    def callback(_ref: weakref.ref[_Dropped]) -> None:
        signal.raise_signal(signal.SIGINT)
        _ = _ref  # the Python-level handler runs here, inside the callback

    dropped = _Dropped()
    ref = weakref.ref(dropped, callback)
    del dropped  # the callback runs now, while ``ref`` is alive
    assert ref() is None


def _before_trio_run() -> None:
    """In the command, before its ``trio.run``: as it reads which daemon to talk to."""
    from podium.cli.common import remote

    server_of = remote.server_of

    def interrupted(args: Any) -> str:
        interrupt_in_weakref_callback()
        return server_of(args)

    remote.server_of = interrupted


def _inside_trio_run() -> None:
    """In the command's main task, inside ``trio.run``: as it connects."""
    import podium.protocol.client as client

    connect = client.connect

    @asynccontextmanager
    async def interrupted(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        interrupt_in_weakref_callback()
        async with connect(*args, **kwargs) as connected:
            yield connected

    client.connect = interrupted  # type: ignore[assignment]  # a wrapper with its signature


def _in_reader_task() -> None:
    """In the connection's reader task, as it hands the first reply to the command's main
    task, which waits for it."""
    from podium.protocol.client.connection import Client

    dispatch = Client._dispatch

    async def interrupted(self: Client, msg: Any) -> None:
        if not _FIRED:
            _FIRED.append(True)
            signal.raise_signal(signal.SIGINT)
        await dispatch(self, msg)

    Client._dispatch = interrupted  # type: ignore[method-assign]


MOMENTS: dict[str, Callable[[], None]] = {
    "weakref callback before trio.run": _before_trio_run,
    "weakref callback inside trio.run": _inside_trio_run,
    "reader task": _in_reader_task,
}


if __name__ == "__main__":
    MOMENTS[sys.argv[1]]()
    from podium.cli.main import run

    sys.argv = ["podium", *sys.argv[2:]]
    run()
