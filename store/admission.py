"""Priority admission: the priority and preemptionPolicy a pod is created with.

Kubernetes counterpart: the Priority admission plugin, plugin/pkg/admission/priority/
admission.go@v1.14 (``admitPod``, ``getDefaultPriorityClass``, ``validatePriorityClass``), with
the later preemptionPolicy rules, and pkg/apis/scheduling's ``SystemPriorityClasses``.

The rule, in one place for every path that gives a pod its priority: the store admits each pod
it creates (and each pending pod whose priority fields a put changes, store/core.py), and the
gateway's ``simulate`` admits the pod it asks about and never stores, so a pod is placed with
the priority a put would have given it, or refused as a put would be:

- a ``priorityClassName`` must name a known class (else "no PriorityClass with name X was
  found"), and the pod takes its value and preemptionPolicy;
- no ``priorityClassName``: the globalDefault class (several, as in a race: the lowest value,
  then the first name), else priority 0 and the pod's own preemptionPolicy;
- a pod that gives a ``priority`` or ``preemptionPolicy`` other than the computed one is
  refused with Kubernetes' message;
- a second globalDefault class is refused.

The known classes are the system ones, which every API server has, overridden by stored ones
of the same name.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from podium.protocol.errors import InvalidObject
from podium.protocol.objects import ObjectMeta, Pod, PriorityClass

__all__ = [
    "DEFAULT_PRIORITY",
    "SYSTEM_PRIORITY_CLASSES",
    "admit_pod",
    "check_single_default",
    "known_classes",
]

DEFAULT_PRIORITY = 0
"""scheduling.DefaultPriorityWhenNoDefaultClassExists."""

SYSTEM_PRIORITY_CLASSES: dict[str, PriorityClass] = {
    pc.metadata.name: pc
    for pc in (
        PriorityClass(metadata=ObjectMeta(name="system-node-critical"), value=2000001000),
        PriorityClass(metadata=ObjectMeta(name="system-cluster-critical"), value=2000000000),
    )
}
"""The classes every Kubernetes API server has (pkg/apis/scheduling SystemPriorityClasses), so
a dump of a real cluster loads without them; a stored class of the same name takes precedence."""


def known_classes(classes: Iterable[PriorityClass]) -> dict[str, PriorityClass]:
    """The classes a pod may name, by name: the system ones, then ``classes`` in order (a
    later class of a name replaces an earlier one)."""
    known = dict(SYSTEM_PRIORITY_CLASSES)
    known.update((pc.metadata.name, pc) for pc in classes)
    return known


def check_single_default(pc: PriorityClass, classes: dict[str, PriorityClass]) -> None:
    """admission.go ``validatePriorityClass``: only one globalDefault class may exist.

    Raises:
        InvalidObject: another class of ``classes`` is the globalDefault already.
    """
    for other in sorted(classes):
        if other != pc.metadata.name and classes[other].global_default:
            raise InvalidObject(
                f"PriorityClass {other} is already marked as default. Only one default can exist",
                path="$.globalDefault",
            )


def _default_class(classes: dict[str, PriorityClass]) -> PriorityClass | None:
    """admission.go ``getDefaultPriorityClass``: with several (a race), the lowest value."""
    defaults = [pc for pc in classes.values() if pc.global_default]
    return min(defaults, key=lambda pc: (pc.value, pc.metadata.name), default=None)


def admit_pod(pod: Pod, classes: dict[str, PriorityClass]) -> Pod:
    """The Priority admission plugin's ``admitPod`` for a create.

    The priority (and preemptionPolicy) comes from the named class, else from the default
    class; with neither the priority is 0 and the preemptionPolicy is left as given.

    Args:
        pod: the pod, its namespace already defaulted (the messages name it).
        classes: the classes it may name (:func:`known_classes`).

    Returns:
        The pod with ``spec.priority`` and ``spec.preemptionPolicy`` set.

    Raises:
        InvalidObject: an unknown class, or a priority or preemptionPolicy other than the
            computed one; the message is Kubernetes' and the path the pod's field.
    """
    ref = f"pod {pod.metadata.namespace}/{pod.metadata.name}"
    name = pod.spec.priority_class_name
    if name:
        pc = classes.get(name)
        if pc is None:
            raise InvalidObject(
                f"{ref}: no PriorityClass with name {name} was found",
                path="$.spec.priorityClassName",
            )
    else:
        pc = _default_class(classes)
    priority = pc.value if pc is not None else DEFAULT_PRIORITY
    if pod.spec.priority is not None and pod.spec.priority != priority:
        raise InvalidObject(
            f"{ref}: the integer value of priority ({pod.spec.priority}) must not be provided in "
            f"pod spec; priority admission controller computed {priority} from the given "
            "PriorityClass name",
            path="$.spec.priority",
        )
    policy = pod.spec.preemption_policy
    if pc is not None:
        if policy is not None and policy != pc.preemption_policy:
            raise InvalidObject(
                f"{ref}: the string value of PreemptionPolicy ({policy}) must not be provided in "
                f"pod spec; priority admission controller computed {pc.preemption_policy} from "
                "the given PriorityClass name",
                path="$.spec.preemptionPolicy",
            )
        policy = pc.preemption_policy
    spec = msgspec.structs.replace(pod.spec, priority=priority, preemption_policy=policy)
    return msgspec.structs.replace(pod, spec=spec)
