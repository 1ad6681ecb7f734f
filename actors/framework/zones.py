"""The zone key of a node: which failure zone it sits in.

Kubernetes counterpart: pkg/util/node/node.go ``GetZoneKey`` (v1.14 read only the
``failure-domain.beta.kubernetes.io/*`` labels; later releases fall back to the GA
``topology.kubernetes.io/*`` labels, which Podium adopts: docs/differences.md, "zone labels").

The key is ``region + ":\\x00:" + zone``: the NUL keeps a region or zone that contains a colon
from colliding with another pair. Each part is read from the beta label when that label is
present (even with an empty value), otherwise from the GA label. A node with neither a region
nor a zone has the key ``""``, which callers read as "no zone".
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "LABEL_REGION_BETA",
    "LABEL_REGION_GA",
    "LABEL_ZONE_BETA",
    "LABEL_ZONE_GA",
    "zone_key",
]

LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE_GA = "topology.kubernetes.io/zone"
LABEL_REGION_GA = "topology.kubernetes.io/region"


def zone_key(labels: Mapping[str, str]) -> str:
    """The zone key of a node with ``labels``, or ``""`` when it names no region and no zone.

    Args:
        labels: the node's labels.

    Returns:
        ``region + ":\\x00:" + zone``, or ``""``.
    """
    region = labels.get(LABEL_REGION_BETA)
    if region is None:
        region = labels.get(LABEL_REGION_GA, "")
    zone = labels.get(LABEL_ZONE_BETA)
    if zone is None:
        zone = labels.get(LABEL_ZONE_GA, "")
    if not region and not zone:
        return ""
    return region + ":\x00:" + zone
