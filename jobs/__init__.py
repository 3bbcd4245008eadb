"""Background jobs: calibration sweeps, trial batches, shift deadlines, exports.

A :class:`~jobs.models.Job` is one piece of background work a person or a command
asked for; its :class:`~jobs.models.JobItem` rows are the units a Celery worker
runs (one task-seed cell, one trial).  The database, not the broker, holds the
state: every task takes ids, reads what it needs from its rows, and does nothing
when its row says the work is done, so a redelivered message (a worker killed
mid-task, ``acks_late``) repeats no finished work and changes no result.  Tasks
are scheduled with ``transaction.on_commit`` so a worker never sees an id whose
row is not committed.

Modules: ``models`` (the rows), ``submit`` (create a job and schedule its tasks),
``calibration`` and ``batch`` (what one item does, and the gathering), ``agents`` (model
trials: one item per cell under a lease, since a model trial cannot be replayed), ``deadlines``
(the periodic shift-deadline sweep), ``progress`` (the helpers an export task
reports through), ``tasks`` (the Celery tasks, thin shells over the above).
"""
