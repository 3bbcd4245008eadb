"""The six anchor policies that calibrate every task-seed cell.

Each anchor acts only through the tool surface (:meth:`Episode.call`), under the
same operation budget as any agent, and reads the store only from tool results.
"""

from .policies import ANCHORS, CHECKS, Policy, get_anchor, run_policy

__all__ = ["ANCHORS", "CHECKS", "Policy", "get_anchor", "run_policy"]
