"""A job deleted (in the admin) while its tasks wait in the queue: each task finds no row
and does nothing.  They raised DoesNotExist, a traceback in the worker's log per queued
item (gather_calibration raised a second one from its own failure handler)."""
import pytest

from jobs import tasks
from jobs.batch import create_batch_job
from jobs.calibration import create_calibration_job

pytestmark = pytest.mark.django_db(transaction=True)


def test_tasks_of_a_deleted_job_do_nothing(tmp_path):
    calibration = create_calibration_job(["counter-punch"], [7, 11], tmp_path / "cal.json")
    batch = create_batch_job(["counter-punch"], [7], tmp_path / "trials", policy="rule-based")
    cells = list(calibration.items.values_list("pk", flat=True))
    trials = list(batch.items.values_list("pk", flat=True))
    calibration_id = calibration.pk
    calibration.delete()
    batch.delete()
    for item_id in cells:
        assert tasks.run_calibration_cell(item_id) is None
    for item_id in trials:
        assert tasks.run_batch_trial(item_id) is None
    assert tasks.gather_calibration(calibration_id) is None
    assert not (tmp_path / "cal.json").exists() and not list((tmp_path / "trials").iterdir())
