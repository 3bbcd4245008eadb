"""Tasks: small TOML configurations over the shared world.

A task sets the horizon, window length, operation budget, opening inventory,
economics overrides, competitors and an event script.  The layout and field
names follow the public release, so its task files load unchanged.  See
:mod:`.model` for the fields and :mod:`.loader` for how files are checked.
"""

from .heldout import HELDOUT_ENV, held_out_dir, held_out_seeds
from .loader import TASK_GROUPS, TaskFileError, all_tasks, get_task, load_task, load_task_text
from .model import Competitor, Event, Task

PUBLIC_SEEDS = (7, 11, 13)

__all__ = ["HELDOUT_ENV", "Competitor", "Event", "PUBLIC_SEEDS", "TASK_GROUPS", "Task", "TaskFileError", "all_tasks", "get_task",
           "held_out_dir", "held_out_seeds", "load_task", "load_task_text"]
