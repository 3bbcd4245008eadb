"""StoreBench's environment core: the Ostrelle world, its hidden dynamics, the 29
merchant tools, tasks, anchors, calibration and grading.

Pure Python by design: nothing in this package imports Django, channels, Celery or
the MCP SDK, so the core can be embedded in any front end (the MCP server, the
browser console, RL trainers) and run thousands of episodes in one process.
"""

__version__ = "0.1.0"
