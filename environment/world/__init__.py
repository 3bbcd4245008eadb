"""The Ostrelle world: one fixed catalog, supplier market, customer base and
18-month history, generated deterministically from a fixed world seed and shared
by every task and task seed.  See :mod:`.generate` for how it is made,
:mod:`.audits` for the checks that gate it and :mod:`.loader` for the hash that
pins it.
"""

from .loader import WorldHashMismatch, load_world, world_hash
from .model import World

__all__ = ["World", "WorldHashMismatch", "load_world", "world_hash"]
