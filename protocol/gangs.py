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

import json

from podium.protocol.objects import Pod, PodGroup, namespaced_key
from podium.protocol.validation import is_dns1123_subdomain

__all__ = [
    "GROUP_ANNOTATIONS",
    "GROUP_LABELS",
    "membership_errors",
    "min_count",
    "names_a_group",
    "pod_group_key",
    "pod_group_name",
    "pod_group_source",
]

GROUP_LABELS = ("scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io")
"""scheduler-plugins' pod label naming the group (current, then before v0.24)."""
GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
"""Volcano's pod annotations naming the group (``KubeGroupNameAnnotationKey``,
``VolcanoGroupNameAnnotationKey``)."""
_LABEL, _OLD_LABEL = GROUP_LABELS
_ANNOTATION, _VOLCANO = GROUP_ANNOTATIONS


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


def names_a_group(pod: Pod) -> bool:
    """Whether the pod may name a group, answered without building anything (a few lookups):
    for scans over every pod, which mostly name none (then :func:`pod_group_key`)."""
    if pod.spec.scheduling_group is not None:
        return True
    labels, annotations = pod.metadata.labels, pod.metadata.annotations
    if labels and (_LABEL in labels or _OLD_LABEL in labels):
        return True
    return bool(annotations) and (_ANNOTATION in annotations or _VOLCANO in annotations)


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


def _dollar(path: str) -> str:
    """A field path in Podium's form: ``metadata.labels[k]`` is ``$.metadata.labels['k']`` (as
    protocol/validation.py names a label's path)."""
    head, sep, key = path.partition("[")
    return f"$.{head}[{key[:-1]!r}]" if sep else f"$.{path}"


def membership_errors(pod: Pod, old: Pod | None) -> list[tuple[str, str]]:
    """``(path, message)`` for a pod's group membership, as the API server would answer: the
    group a DNS subdomain of the pod's own namespace (a ``namespace/name`` names another
    namespace, which no form allows), one group however many forms name it, and on update
    (``old`` given) the group unchanged (``spec.schedulingGroup`` is immutable). The path is
    Podium's (``$.metadata.labels['scheduling.x-k8s.io/pod-group']``), the message
    Kubernetes' (``metadata.labels[scheduling.x-k8s.io/pod-group]: Invalid value: "a/b":
    ...``)."""
    if not names_a_group(pod) and (old is None or not names_a_group(old)):
        return []  # nearly every put: a few lookups instead of ~3 us of lists (issue 27)
    errors: list[tuple[str, str]] = []
    found = _sources(pod)
    for path, name in found:
        shown = json.dumps(name)
        if "/" in name:
            errors.append(
                (
                    _dollar(path),
                    f"{path}: Invalid value: {shown}: a pod group is in the pod's own "
                    f"namespace ({pod.metadata.namespace or 'default'}); name it without a "
                    "namespace",
                )
            )
            continue
        errors += [
            (_dollar(path), f"{path}: Invalid value: {shown}: {m}")
            for m in is_dns1123_subdomain(name)
        ]
    names = {name for _, name in found}
    if len(names) > 1:
        listed = ", ".join(f"{path}={json.dumps(name)}" for path, name in found)
        path, name = next((p, n) for p, n in found if n != found[0][1])
        errors.append(
            (
                _dollar(path),
                f"{path}: Invalid value: {json.dumps(name)}: a pod belongs to one pod group; "
                f"it names {listed}",
            )
        )
    if old is not None:
        before, after = pod_group_source(old), (found[0] if found else None)
        was, now = (before[1] if before else None), (after[1] if after else None)
        if was != now:
            # The field the put sets, or the one it dropped.
            path = (after or before or ("spec.schedulingGroup.podGroupName", ""))[0]
            in_group = f"pod group {json.dumps(was)}" if was is not None else "no pod group"
            errors.append(
                (
                    _dollar(path),
                    f"{path}: Invalid value: {json.dumps(now)}: field is immutable (the pod "
                    f"was in {in_group})",
                )
            )
    return errors
