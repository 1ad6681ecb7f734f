"""Plugins as a policy file names them, for tests that drive the filter and score stages.

Built the way the daemon builds them (``decode_policy`` -> ``resolve_policy`` ->
``build_plugins``), so a test names Kubernetes' predicates and priorities and never a plugin
class.
"""

from __future__ import annotations

from collections.abc import Sequence

from podium.actors.framework.interface import FilterPlugin, PluginArgs, ScorePlugin
from podium.actors.plugins import names
from podium.actors.plugins.policy import build_plugins, resolve_policy
from podium.actors.plugins.volume_binding import VolumeBinding
from podium.protocol.policy import decode_policy

__all__ = ["plugins", "volume_binder"]


def plugins(
    predicates: Sequence[str] = (), priorities: Sequence[tuple[str, int]] = ()
) -> tuple[list[FilterPlugin], list[tuple[ScorePlugin, int]]]:
    """The predicates and (priority, weight) pairs of a policy naming exactly these."""
    policy = {
        "kind": "Policy",
        "apiVersion": "v1",
        "predicates": [{"name": name} for name in predicates],
        "priorities": [{"name": name, "weight": weight} for name, weight in priorities],
    }
    return build_plugins(resolve_policy(decode_policy(policy).policy))


def volume_binder() -> VolumeBinding:
    """The volume binder the score actor decides placed pods' claims with, as
    :func:`~podium.actors.supervisor.supervisor.load_plugin_set` builds it."""
    return VolumeBinding(PluginArgs(name=names.CHECK_VOLUME_BINDING))
