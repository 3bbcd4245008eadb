"""RL adapters over the tool surface (the optional ``rl`` extra: ``pip install 'storebench[rl]'``).

- :mod:`.session`: what every adapter shares: which cell to play (seeding), one action
  = one tool call, malformed actions, ending, and the dense / shaped / composite rewards.
- :mod:`.gym_env`: ``StoreBench-v0``, a Gymnasium environment with text spaces.
  Importing this package registers it.
- :mod:`mcp_client.openenv_env` (outside the core, since OpenEnv brings the MCP SDK): the store as an OpenEnv (meta-pytorch) environment
  serving the 29 tools through OpenEnv's ``ListToolsAction`` / ``CallToolAction``.
  OpenEnv is imported only when that adapter is first used.
- :mod:`.vector`: many episodes in parallel across processes, and Gymnasium vector envs.

None of these modules imports Django, Channels, Celery or the MCP SDK at import time.
"""

from __future__ import annotations

import gymnasium

from .gym_env import ENV_ID, StoreBenchEnv


def register() -> None:
    """Register ``StoreBench-v0`` with Gymnasium; calling it again does nothing."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="environment.rl.gym_env:StoreBenchEnv")


register()

__all__ = ["ENV_ID", "StoreBenchEnv", "register"]
