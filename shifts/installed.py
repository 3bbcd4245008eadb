"""A shift's task as installed on this server.

A shift names its task by id; the task file may have been removed or renamed since the
shift was assigned.  Every path of the shift domain that needs the task (opening the
store, replaying it, grading, reading a window's length) looks it up here, so each
refuses the same way: :class:`~shifts.errors.TaskUnavailable`, which the console shows as
a page and the study's actions as a refusal naming the task, never as a server error.
"""
from __future__ import annotations

from environment.api import arm
from environment.engine import Episode
from environment.tasks import Task, TaskFileError, get_task

from .errors import TaskUnavailable


def task_of(task_id: str) -> Task:
    try:
        return get_task(task_id)
    except TaskFileError as error:
        raise TaskUnavailable(str(error)) from error


def installed(task_id: str) -> bool:
    """Whether ``task_id`` is a task this server can load (a study's cell or a shift may name
    one removed or renamed since)."""
    try:
        task_of(task_id)
    except TaskUnavailable:
        return False
    return True


def armed(task_id: str, seed: int, *, record: bool = False) -> Episode:
    """A fresh episode of the installed task (:func:`environment.api.arm`)."""
    return arm(task_of(task_id), seed, record=record)
