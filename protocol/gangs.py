"""Pod groups: which group a pod belongs to, and how many of a group must be placed at once.

A pod joins a group in the form of the scheduler it was written for, and Podium reads all three:

==============================================  ============================================
form                                            a pod joins with
==============================================  ============================================
Kubernetes v1.36+ (scheduling.k8s.io PodGroup)  ``spec.schedulingGroup.podGroupName``
scheduler-plugins Coscheduling                  label ``scheduling.x-k8s.io/pod-group`` (or
(scheduling.x-k8s.io PodGroup)                  ``pod-group.scheduling.sigs.k8s.io`` before
                                                v0.24)
Volcano (scheduling.volcano.sh PodGroup)        annotation ``scheduling.k8s.io/group-name``
                                                (or ``scheduling.volcano.sh/group-name``)
==============================================  ============================================

A group is always in the pod's own namespace (each form names it by name alone). A group is a
*gang* when all-or-nothing applies: ``schedulingPolicy.gang`` (``minCount``), or ``minMember``
in the other two forms; ``schedulingPolicy.basic`` schedules its pods one by one, as pods with
no group.

Sans-IO and pure: the store validates pods with :func:`membership_errors`, the queue and the
scheduler ask :func:`pod_group_key` and :func:`min_count`.
"""

from __future__ import annotations

from podium.protocol.objects import Pod, PodGroup, namespaced_key
from podium.protocol.validation import is_dns1123_subdomain

__all__ = [
    "GROUP_ANNOTATIONS",
    "GROUP_LABELS",
    "membership_errors",
    "min_count",
    "pod_group_key",
    "pod_group_name",
    "pod_group_source",
]

GROUP_LABELS = ("scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io")
"""scheduler-plugins' pod label naming the group (current, then before v0.24)."""
GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
"""Volcano's pod annotations naming the group (``KubeGroupNameAnnotationKey``,
``VolcanoGroupNameAnnotationKey``)."""


def _sources(pod: Pod) -> list[tuple[str, str]]:
    """Every ``(field path, group name)`` the pod sets, in the order of the table above."""
    found: list[tuple[str, str]] = []
    group = pod.spec.scheduling_group
    if group is not None and group.pod_group_name:
        found.append(("spec.schedulingGroup.podGroupName", group.pod_group_name))
    labels, annotations = pod.metadata.labels, pod.metadata.annotations
    found += [(f"metadata.labels[{k}]", labels[k]) for k in GROUP_LABELS if labels.get(k)]
    found += [
        (f"metadata.annotations[{k}]", annotations[k])
        for k in GROUP_ANNOTATIONS
        if annotations.get(k)
    ]
    return found


def pod_group_source(pod: Pod) -> tuple[str, str] | None:
    """``(field path, group name)`` of the pod's group, or None when it names none."""
    found = _sources(pod)
    return found[0] if found else None


def pod_group_name(pod: Pod) -> str | None:
    """The name of the pod's group (in its own namespace), or None."""
    found = _sources(pod)
    return found[0][1] if found else None


def pod_group_key(pod: Pod) -> str | None:
    """``namespace/name`` of the pod's group, or None when it belongs to none."""
    name = pod_group_name(pod)
    return None if name is None else namespaced_key(pod.metadata.namespace, name)


def min_count(group: PodGroup) -> int | None:
    """How many of the group's pods must be placed at once, or None when the group is not a
    gang (``schedulingPolicy.basic``)."""
    policy = group.spec.scheduling_policy
    if policy is not None:
        return policy.gang.min_count if policy.gang is not None else None
    return group.spec.min_member


def membership_errors(pod: Pod, old: Pod | None) -> list[tuple[str, str]]:
    """``(path, message)`` for a pod's group membership, as the API server would answer: the
    group a DNS subdomain of the pod's own namespace (a ``namespace/name`` names another
    namespace, which no form allows), one group however many forms name it, and on update
    (``old`` given) the group unchanged (``spec.schedulingGroup`` is immutable)."""
    errors: list[tuple[str, str]] = []
    found = _sources(pod)
    for path, name in found:
        if "/" in name:
            errors.append(
                (
                    f"$.{path}",
                    f"{path}: Invalid value: {name!r}: a pod group is in the pod's own "
                    f"namespace ({pod.metadata.namespace or 'default'}); name it without a "
                    "namespace",
                )
            )
            continue
        errors += [
            (f"$.{path}", f"{path}: Invalid value: {name!r}: {m}")
            for m in is_dns1123_subdomain(name)
        ]
    names = {name for _, name in found}
    if len(names) > 1:
        listed = ", ".join(f"{path}={name!r}" for path, name in found)
        errors.append(
            (
                f"$.{found[1][0]}",
                f"{found[1][0]}: Invalid value: a pod belongs to one pod group; it names {listed}",
            )
        )
    if old is not None:
        before, after = pod_group_name(old), pod_group_name(pod)
        if before != after:
            path = found[0][0] if found else "spec.schedulingGroup.podGroupName"
            errors.append(
                (
                    f"$.{path}",
                    f"{path}: Invalid value: {after!r}: field is immutable (the pod was in "
                    f"pod group {before!r})",
                )
            )
    return errors
