"""The episode engine: the live store for one (task, seed).

See :mod:`.episode` for the clock and the tool surface, :mod:`.dynamics` for what
happens as windows pass, :mod:`.settlement` for the end of a shift and the score.
"""

from .episode import Episode, ToolResult

__all__ = ["Episode", "ToolResult"]
