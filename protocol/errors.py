"""Podium's exception tree and the error codes an ``ErrorReply`` carries.

Every error Podium raises on purpose is a :class:`PodiumError`; foreign exceptions
(``msgspec.ValidationError``, ``sqlite3.Error``, ``yaml.YAMLError``, ``ssl.SSLError``) are mapped
to one of these at the boundary where they arise, so callers catch one tree. The tree names
every one with the module that defines it (tests/test_exception_tree.py holds it to the code)::

    exception                      code         module
    PodiumError                    internal     protocol/errors.py
    ├── ProtocolError              invalid      protocol/errors.py
    │   ├── MalformedFrame         invalid      protocol/errors.py
    │   ├── FrameTooLarge          too_large    protocol/errors.py
    │   └── InvalidRequest         invalid      protocol/errors.py
    ├── InvalidObject              invalid      protocol/errors.py
    ├── QuantityError              invalid      protocol/quantity.py (also a ValueError)
    ├── CacheStateError            internal     protocol/errors.py
    │   ├── AlreadyAssumed         internal     protocol/errors.py
    │   └── NotAssumed             internal     protocol/errors.py
    ├── StoreError                 unavailable  protocol/errors.py
    │   ├── DatabaseDamaged        unavailable  protocol/errors.py
    │   ├── LeadershipLost         unavailable  protocol/errors.py
    │   ├── FollowerBehind         unavailable  protocol/errors.py
    │   ├── CommitRefused          too_large    protocol/errors.py
    │   └── EtcdError              unavailable  store/etcd/client.py
    │       ├── EtcdUnavailable    unavailable  store/etcd/client.py
    │       ├── EtcdUnknownOutcome unavailable  store/etcd/client.py
    │       └── EtcdRequestRefused too_large    store/etcd/client.py
    ├── StoreRejected              varies       store/core.py
    ├── _FileProblems              invalid      protocol/errors.py
    │   ├── PolicyError            invalid      protocol/errors.py
    │   └── ConfigError            invalid      protocol/errors.py
    ├── LoadError                  invalid      protocol/errors.py
    ├── LoadErrors                 invalid      protocol/errors.py
    ├── PredicateError             internal     actors/framework/interface.py
    ├── ExtenderError              unavailable  actors/cycle/extenders/client.py
    ├── RegistryError              internal     actors/plugins/registry.py (also a LookupError)
    ├── PluginModuleMissing        internal     actors/plugins/registry.py (also an ImportError)
    ├── SimulationError            invalid      actors/simulation/cluster.py (also a ValueError)
    ├── DaemonError                internal     cli/bench/process.py
    ├── BenchError                 internal     cli/bench/scheduler_perf.py
    │   ├── PartlyBoundError       internal     cli/bench/scheduler_perf.py
    │   └── BaselineError          invalid      cli/bench/command.py
    ├── RemoteError                varies       protocol/client/errors.py
    └── ClientConnectionError      unavailable  protocol/client/errors.py (also a ConnectionError)
        ├── ServerUnreachable      unavailable  protocol/client/errors.py
        ├── ConnectionLost         unavailable  protocol/client/errors.py
        ├── LeaderUnavailable      unavailable  protocol/client/errors.py
        └── TLSFailed              unavailable  protocol/client/errors.py

What they mean, by branch:

- The wire: :class:`MalformedFrame` (undecodable bytes) and :class:`FrameTooLarge` close the
  connection after the reply; :class:`InvalidRequest` (a decodable message that does not
  validate, with ``request_id`` and ``path``) leaves it open.
- Objects and files: :class:`InvalidObject` and ``QuantityError`` name the field (``path``);
  :class:`PolicyError` and :class:`ConfigError` list every problem of a file; a
  :class:`LoadError` is one object of a file, :class:`LoadErrors` every one of a load.
- State: :class:`CacheStateError` is a wrong assume/forget transition (a bug, not a request's
  fault); :class:`StoreError` is SQLite failing (mapped from ``sqlite3.Error``, or the
  database locked by another daemon) or etcd's store losing its prefix to another writer;
  ``EtcdError`` an answer etcd gave, ``EtcdUnavailable`` no member serving (the quorum
  lost), ``EtcdUnknownOutcome`` a write whose answer was lost, ``EtcdRequestRefused`` a
  request etcd refuses for what it is (too large, too many operations), not for the
  cluster's health; :class:`CommitRefused` a batch the backend refused that way before any
  of it was committed (the store rejects its writes and goes on); :class:`DatabaseDamaged` is a database file that fails
  the check at start (damaged, emptied, not SQLite) or a row that no longer decodes;
  ``StoreRejected`` is the store refusing a request or one object of it, with the code its
  ``StoreFailure`` reply carries.
- Scheduling: ``PredicateError`` fails one attempt with result error; ``ExtenderError`` is an
  extender call that failed (it fails the attempt unless the extender is ``ignorable``); the registry's errors are
  a plugin module missing or not matching the registry; ``SimulationError`` is input
  ``podium simulate`` cannot run.
- Tools: ``DaemonError`` is a ``podium serve`` child that did not start or stop;
  ``BenchError`` a benchmark run that could not complete (``PartlyBoundError``: a gang
  workload ended with a pod group partly bound); ``BaselineError`` a saved run
  (``podium bench --compare``) that cannot be read or lacks what this run measures.
- The client's (podium.protocol.client): ``RemoteError`` is the daemon's ``ErrorReply`` (its code
  is the reply's); ``ClientConnectionError`` and its kinds, a connection that could not be
  opened or was lost.

Messages name the object and the rule that was broken, e.g. ``pod default/web-1 is already
assumed on node-3; cannot assume twice``. Paths follow msgspec: ``$.spec.containers[0].image``
for objects; policy and config paths are written without the ``$.``
(``priorities[2].weight``), as README.md ("Policies and configuration") shows them.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = [
    "AlreadyAssumed",
    "CacheStateError",
    "CommitRefused",
    "ConfigError",
    "DatabaseDamaged",
    "ErrorCode",
    "FollowerBehind",
    "FrameTooLarge",
    "InvalidObject",
    "InvalidRequest",
    "LeadershipLost",
    "LoadError",
    "LoadErrors",
    "MalformedFrame",
    "NotAssumed",
    "PodiumError",
    "PolicyError",
    "Problem",
    "ProtocolError",
    "StoreError",
    "split_validation_message",
]

ErrorCode = Literal[
    "invalid",
    "not_found",
    "conflict",
    "gone",
    "too_large",
    "unauthorized",
    "forbidden",
    "overloaded",
    "unavailable",
    "internal",
    "not_leader",
]
"""The ``code`` of an ``ErrorReply`` (docs/protocol.md, "Errors")."""


class PodiumError(Exception):
    """The root of every error Podium raises on purpose.

    Attributes:
        code: the ``ErrorReply`` code a client sees for this error.
    """

    code: ErrorCode = "internal"


# --------------------------------------------------------------------------- protocol


class ProtocolError(PodiumError):
    """A frame or message the daemon cannot accept."""

    code: ErrorCode = "invalid"


class MalformedFrame(ProtocolError):
    """A frame whose payload cannot be decoded; the connection is closed after the reply."""


class FrameTooLarge(ProtocolError):
    """A frame longer than the limit; the connection is closed after the reply.

    Args:
        size: the length the frame header announced, in bytes.
        limit: the largest frame accepted, in bytes.
    """

    code: ErrorCode = "too_large"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class InvalidRequest(ProtocolError):
    """A frame that decodes but whose message does not validate (a wrong field type, a missing
    field, an unknown ``msg``); the daemon answers it and keeps the connection open.

    Args:
        message: what is wrong, naming the rule (msgspec's text, or Podium's).
        request_id: the ``id`` of the request when it could be read, else -1 (the hello, or a
            payload without an integer ``id``).
        path: the offending field, msgspec style (``$.objects[0].spec.priority``), when known.
    """

    code: ErrorCode = "invalid"

    def __init__(self, message: str, *, request_id: int = -1, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.path = path


# --------------------------------------------------------------------------- objects


class InvalidObject(PodiumError):
    """A Kubernetes-shaped object with a field of the wrong type or an impossible value.

    Args:
        message: what is wrong, naming the object and the rule.
        path: the field, msgspec style (``$.spec.containers[0].resources.requests['cpu']``),
            or ``None`` when the object as a whole is wrong.
    """

    code: ErrorCode = "invalid"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


# --------------------------------------------------------------------------- cache


class CacheStateError(PodiumError):
    """A pod state transition the node cache does not allow (see actors/cache/core.py)."""


class AlreadyAssumed(CacheStateError):
    """Assume of a pod that is already assumed (or bound)."""


class NotAssumed(CacheStateError):
    """Forget or finish-binding of a pod that is not assumed."""


# --------------------------------------------------------------------------- store


class StoreError(PodiumError):
    """The store could not read or write its backend (mapped from ``sqlite3.Error``, or from
    etcd's answers in store/etcd/client.py)."""

    code: ErrorCode = "unavailable"


class LeadershipLost(StoreError):
    """This replica led and no longer does: its lease was not renewed within the renew
    deadline, or a transaction's fence (the leadership key's compare) failed. The daemon exits
    (``podium serve`` exits 4, as kube-scheduler exits on a lost lease) and its supervisor
    restarts it as a follower; nothing it had not committed was acknowledged."""


class FollowerBehind(StoreError):
    """A follower replica fell behind the kept event log (the leader compacted it past the
    follower's revision): it stops (exit 1) and reloads the store when restarted."""


class CommitRefused(StoreError):
    """The backend refused a batch for what the request is (etcd's ``request is too large``,
    ``too many operations in txn request``), not for the backend's health, before any of it
    was committed: the store takes the batch back, rejects the writes in it with this code and
    message, and goes on. Nothing of it is replayed later (docs/reliability.md, "Objects too
    large for the store").

    Attributes:
        code: ``too_large``, or ``internal`` for a refusal that is Podium's own fault (etcd's
            ``duplicate key given in txn request``).
    """

    code: ErrorCode = "too_large"

    def __init__(self, message: str, *, code: ErrorCode = "too_large") -> None:
        super().__init__(message)
        self.code = code


class DatabaseDamaged(StoreError):
    """The database file is damaged, emptied or not a Podium database: the daemon refuses it
    (``podium serve`` exits 3) rather than serve it as it reads; the message names the file and
    what is wrong."""


# --------------------------------------------------------------------------- files


Problem = tuple[str, str]
"""A ``(path, message)`` pair; ``path`` is ``""`` for the document as a whole."""


class _FileProblems(PodiumError):
    """Shared shape of PolicyError and ConfigError: one or more (path, message) problems."""

    code: ErrorCode = "invalid"
    _what = "file"

    def __init__(
        self, problems: list[Problem] | tuple[Problem, ...], *, source: str | None = None
    ) -> None:
        if not problems:
            raise ValueError(f"a {type(self).__name__} needs at least one problem")
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.source = source
        self.path: str = self.problems[0][0]
        self.message: str = self.problems[0][1]
        super().__init__(self._render())

    def _render(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        lines = [f"{path}: {message}" if path else message for path, message in self.problems]
        if len(lines) == 1:
            return prefix + lines[0]
        return f"{prefix}{len(lines)} problems in this {self._what}:\n  " + "\n  ".join(lines)


class PolicyError(_FileProblems):
    """A scheduler Policy that breaks a rule (README.md, "Policies and configuration").

    Every problem found is reported, as Kubernetes' ``ValidatePolicy`` does.

    Args:
        problems: ``(path, message)`` pairs, e.g. ``("predicates[3].name", 'unknown predicate "Foo"')``.
        source: the policy file, when there is one.

    Attributes:
        path: the first problem's path (``priorities[2].weight``).
        message: the first problem's message.
        problems: every problem, in document order.
    """

    _what = "policy"


class ConfigError(_FileProblems):
    """A KubeSchedulerConfiguration file (or Podium's ``podium:`` section) that breaks a rule.

    Args:
        problems: ``(path, message)`` pairs, e.g. ``("podium.listne", "unknown key")``.
        source: the config file, when there is one.

    Attributes:
        path: the first problem's key path (``podium.tracing.sampleRatio``).
        message: the first problem's message.
        problems: every problem, in document order.
    """

    _what = "config"


class LoadError(PodiumError):
    """One object of an objects file that cannot be loaded, or the file itself.

    Args:
        reason: what is wrong (msgspec's text, or Podium's).
        file: the file name (``-`` for stdin, ``<text>`` for a string).
        index: the object's position in the file (0-based, counting every object of every
            document and every ``List`` item), or ``None`` for a file-level problem.
        kind: the object's ``kind`` when known.
        namespace: the object's ``metadata.namespace`` when known.
        name: the object's ``metadata.name`` when known.
        path: the field, msgspec style (``$.spec.containers[0].resources.requests['cpu']``).
    """

    code: ErrorCode = "invalid"

    def __init__(
        self,
        reason: str,
        *,
        file: str,
        index: int | None = None,
        kind: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        path: str | None = None,
    ) -> None:
        self.reason = reason
        self.file = file
        self.index = index
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.path = path
        super().__init__(self._render())

    @property
    def object_ref(self) -> str | None:
        """``namespace/name`` (or ``name``) when the name is known."""
        if not self.name:
            return None
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def _render(self) -> str:
        where = self.file
        if self.index is not None:
            what = " ".join(part for part in (self.kind, self.object_ref) if part)
            where += f": object {self.index}" + (f" ({what})" if what else "")
        if self.path:
            where += f" at {self.path}"
        return f"{where}: {self.reason}"


class LoadErrors(PodiumError):
    """Every :class:`LoadError` of one load: a file is checked whole, not up to its first error.

    Args:
        errors: the errors, in file order.
    """

    code: ErrorCode = "invalid"

    def __init__(self, errors: list[LoadError] | tuple[LoadError, ...]) -> None:
        if not errors:
            raise ValueError("LoadErrors needs at least one LoadError")
        self.errors: tuple[LoadError, ...] = tuple(errors)
        if len(self.errors) == 1:
            text = str(self.errors[0])
        else:
            text = f"{len(self.errors)} objects could not be loaded:\n  " + "\n  ".join(
                str(e) for e in self.errors
            )
        super().__init__(text)


# --------------------------------------------------------------------------- msgspec

_AT_KEY = re.compile(r"^(?P<reason>.*) - at `key` in `(?P<path>\$[^`]*)`$", re.DOTALL)
_AT = re.compile(r"^(?P<reason>.*) - at `(?P<path>\$[^`]*)`$", re.DOTALL)
_BELOW = re.compile(r"^(?P<reason>.*?) - at `(?P<path>[.\[][^`]*)`$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<field>[^`]+)`$")


def split_validation_message(text: str) -> tuple[str, str | None]:
    """Split a ``msgspec.ValidationError`` message into ``(reason, path)``.

    ``"Expected `int`, got `str` - at `$.spec.priority`"`` gives
    ``("Expected `int`, got `str`", "$.spec.priority")``. A missing field is reported at the
    field itself: ``"Object missing required field `name` - at `$.metadata`"`` gives
    ``("missing required field", "$.metadata.name")``; likewise an unknown field (structs with
    ``forbid_unknown_fields``) gives ``("unknown field", "$.podium.listne")``. A bad mapping
    key gives the mapping's path and a reason ending in ``(a key)``. A struct's
    ``__post_init__`` may name the field below it: ``"name or generateName is required - at
    `.name` - at `$.metadata`"`` gives ``("name or generateName is required",
    "$.metadata.name")``.

    Returns:
        The reason, and the path (``None`` when msgspec gave none).
    """
    if match := _AT_KEY.match(text):
        return f"{match['reason']} (a key)", match["path"]
    reason, path = text, None
    if match := _AT.match(text):
        reason, path = match["reason"], match["path"]
    if below := _BELOW.match(reason):
        # A ``__post_init__`` that named the field below its struct.
        reason, path = below["reason"], f"{path or '$'}{below['path']}"
    if missing := _MISSING.match(reason):
        return "missing required field", f"{path or '$'}.{missing['field']}"
    if unknown := _UNKNOWN.match(reason):
        return "unknown field", f"{path or '$'}.{unknown['field']}"
    return reason, path
