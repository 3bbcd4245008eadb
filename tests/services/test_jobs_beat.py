"""Celery beat ends overdue shifts: a real ``celery beat`` sends the deadline sweep to a
real worker on the broker, against PostgreSQL; the shift nobody is looking at ends
at its deadline, graded as played, and a shift within its deadline is left alone."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from serverprocs import BIN, make_participants, server_env, wait_for

pytestmark = pytest.mark.services


def test_beat_sweep_ends_overdue_shifts(live_database, broker_up, processes, tmp_path):
    from shifts.models import Shift

    (_u1, _p1, overdue), (_u2, _p2, current) = make_participants(2, "beat", "counter-punch")
    Shift.objects.filter(pk=overdue.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    env = server_env(live_database, STOREBENCH_DEADLINE_SWEEP_SECONDS="1")
    worker = processes.start([str(BIN / "celery"), "-A", "config", "worker", "--pool=solo", "--loglevel=INFO",
                              "-n", "beattest@%h", "--without-gossip", "--without-mingle"], env, "worker")
    beat = processes.start([str(BIN / "celery"), "-A", "config", "beat", "--loglevel=INFO",
                            f"--schedule={tmp_path / 'beat-schedule'}"], env, "beat")
    wait_for(lambda: Shift.objects.get(pk=overdue.pk).status == Shift.Status.ENDED, 90,
             "the overdue shift to end", worker)
    overdue.refresh_from_db()
    current.refresh_from_db()
    assert overdue.end_reason == "deadline" and overdue.score_composite is not None
    assert current.status == Shift.Status.ACTIVE
    assert "enforce_shift_deadlines" in beat.output() and beat.alive()
