"""A Ctrl-C that is never lost (issue 26 point 4): noticing a ``KeyboardInterrupt`` the
interpreter swallowed, and running a command's ``trio.run`` so that none is swallowed there.

Kubernetes counterpart: none (kubectl is Go: a SIGINT kills it outright).

Why: Python raises the ``KeyboardInterrupt`` of a SIGINT in whatever Python code runs when the
signal is handled. When that code is a weakref callback or a ``__del__`` (importlib's
module-lock callback runs at the end of every import; trio and the standard library keep weak
sets and dictionaries), the interpreter prints ``Exception ignored in ...`` with the traceback
and carries on: the Ctrl-C is lost (CPython issue 95959). trio's own handler raises the same
way in any task's code. A ``podium watch`` that lost it ran until killed (9 minutes once under
load: SIGINT right after the client was imported, swallowed in ``_get_module_lock``'s
callback inside ``trio.run``); an interrupt raised in the connection's reader task came out as
``warning: connection ... lost: closed by the daemon`` before the exit.

What is done:

- :func:`noticing_lost_interrupts` (around :func:`podium.cli.main.main`) hooks
  ``sys.unraisablehook``: a ``KeyboardInterrupt`` the interpreter is about to print and ignore
  is remembered instead, silently; :func:`raise_if_interrupted` raises it again where code can
  stop: ``main`` when the command returns, :func:`run_trio` as the run begins, and
  :mod:`~podium.cli.common.output`'s ``out`` and ``err`` before they print.
- :func:`run_trio` runs ``trio.run`` with ``restrict_keyboard_interrupt_to_checkpoints``:
  trio's handler then never raises in arbitrary code (a reader task, a callback) but hands the
  interrupt to the main task at its next checkpoint, where it unwinds every nursery and
  connection as a cancellation does. It also notes that one came, so that an answer that
  arrived with the Ctrl-C is not printed before the main task takes it.

Cancellation: inside :func:`run_trio` a Ctrl-C waits for the main task's next checkpoint or
line of output; code that runs long without either finishes that stretch first.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator
    from types import FrameType

__all__ = ["noticing_lost_interrupts", "raise_if_interrupted", "run_trio"]

_T = TypeVar("_T")


class _Interrupt:
    """A Ctrl-C not yet raised where the command can stop (one per process: signals are
    handled on the main thread only).

    Attributes:
        lost: the interpreter swallowed its ``KeyboardInterrupt`` (an unraisable one).
        pending: it came inside :func:`run_trio`, whose main task has yet to take it.
    """

    lost = False
    pending = False


def _remember(previous: Callable[[sys.UnraisableHookArgs], object]) -> Callable[..., None]:
    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            _Interrupt.lost = True  # said as exit 130 where it is raised again; no traceback
            return
        previous(unraisable)

    return hook


@contextmanager
def noticing_lost_interrupts() -> Iterator[None]:
    """Remember, rather than print and drop, a ``KeyboardInterrupt`` raised where Python
    cannot propagate it (a weakref callback, a ``__del__``); the previous hook gets every
    other unraisable exception, and is back in place on the way out."""
    previous = sys.unraisablehook
    _Interrupt.lost = _Interrupt.pending = False
    sys.unraisablehook = _remember(previous)
    try:
        yield
    finally:
        sys.unraisablehook = previous


def raise_if_interrupted() -> None:
    """Raise the Ctrl-C the interpreter swallowed, or the one :func:`run_trio`'s main task
    has not taken yet; :func:`~podium.cli.common.output.out` and ``err`` call it, so that
    nothing is printed after a Ctrl-C.

    Raises:
        KeyboardInterrupt: a Ctrl-C came and was not raised where the command can stop.
    """
    if _Interrupt.lost or _Interrupt.pending:
        _Interrupt.lost = _Interrupt.pending = False
        raise KeyboardInterrupt


def run_trio(async_fn: Callable[[], Awaitable[_T]]) -> _T:
    """``trio.run(async_fn)`` for a command: a Ctrl-C swallowed before trio's handler was in
    place stops it as it begins; one after is delivered at the main task's checkpoints (or
    its next line of output), never raised in other code (see the module docstring).

    Raises:
        KeyboardInterrupt: Ctrl-C, possibly inside an exception group (as ``trio.run``).
    """
    import trio

    noting: list[Callable[[int, FrameType | None], Any]] = []

    async def checked() -> _T:
        raise_if_interrupted()
        trio_handler = signal.getsignal(signal.SIGINT)
        if callable(trio_handler) and threading.current_thread() is threading.main_thread():

            def note(signum: int, frame: FrameType | None) -> None:
                _Interrupt.pending = True
                trio_handler(signum, frame)

            noting.append(note)
            signal.signal(signal.SIGINT, note)
        return await async_fn()

    try:
        return trio.run(checked, restrict_keyboard_interrupt_to_checkpoints=True)
    finally:
        # trio puts Python's handler back only if its own is in place; ours wraps it.
        if noting and signal.getsignal(signal.SIGINT) is noting[0]:
            signal.signal(signal.SIGINT, signal.default_int_handler)
