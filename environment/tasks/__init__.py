"""Tasks: small TOML configurations over the shared world.

A task sets the horizon, window length, operation budget, opening inventory,
economics overrides, competitors and an event script.  The layout and field
names follow the public release, so its task files load unchanged.  See
:mod:`.model` for the fields and :mod:`.loader` for how files are checked.
"""

from .loader import TaskFileError, all_tasks, get_task, load_task, load_task_text
from .model import Competitor, Event, Task

PUBLIC_SEEDS = (7, 11, 13)
HELD_OUT_SEEDS = (101, 211)

__all__ = ["Competitor", "Event", "HELD_OUT_SEEDS", "PUBLIC_SEEDS", "Task", "TaskFileError",
           "all_tasks", "get_task", "load_task", "load_task_text"]
