"""Calibration files that cannot be used fail closed with a message naming the file:
the side hash is checked where the file is read, ending a shift answers a clear 503
(nothing changes), the deadline sweep goes on past each shift it cannot grade, and
``import_trials`` names a bad known file and goes on."""
import logging
import shutil
from datetime import timedelta
from io import StringIO

import pytest
from console_helpers import briefed_user
from django.core.management import call_command
from django.utils import timezone
from test_explorer_import import folder  # noqa: F401

from environment.calibration import CalibrationError, load_calibration
from jobs.deadlines import sweep
from shifts import grading, lifecycle
from shifts.models import Shift

PUBLIC = "calibration/public.json"


@pytest.fixture
def copy(tmp_path):
    target = tmp_path / "public.json"
    shutil.copy(PUBLIC, target)
    shutil.copy(PUBLIC + ".sha256", tmp_path / "public.json.sha256")
    return target


@pytest.fixture
def truncated(copy):
    copy.write_bytes(copy.read_bytes()[:500])
    (copy.parent / "public.json.sha256").unlink()
    return copy


@pytest.fixture
def grading_with(settings):
    def use(path):
        settings.STOREBENCH_CALIBRATION = path
        grading._calibration.cache_clear()
    yield use
    grading._calibration.cache_clear()


def test_a_file_matching_its_side_hash_loads(copy):
    _doc, digest = load_calibration(copy)
    assert (copy.parent / "public.json.sha256").read_text().strip() == digest


def test_a_file_that_does_not_match_its_side_hash_is_refused(copy):
    (copy.parent / "public.json.sha256").write_text("sha256:" + "0" * 64 + "\n")
    with pytest.raises(CalibrationError, match="public.json: the file does not match its recorded hash in "
                                               "public.json.sha256"):
        load_calibration(copy)


def test_ending_a_shift_with_a_truncated_calibration_is_a_clear_503(client, db, truncated, grading_with,
                                                                     fast_password_hashing, fresh_console_cache,
                                                                     caplog):
    user = briefed_user("iris")
    shift = lifecycle.start_shift(user, "counter-punch", 7, practice=True)
    grading_with(truncated)
    client.force_login(user)
    response = client.post(f"/shifts/{shift.pk}/end/")
    assert response.status_code == 503
    assert "public.json" in response.content.decode() and "nothing was" in response.content.decode()
    assert str(truncated.parent) not in response.content.decode()  # the server's paths stay in the log
    (logged,) = [r.getMessage() for r in caplog.records if r.name == "config.middleware"]
    assert str(truncated) in logged and "restore the file from the release" in logged
    assert "leave the option out" not in logged  # the core's advice is for the command line
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ACTIVE and shift.score_composite is None


@pytest.fixture
def other_world(copy):
    """The public file as kept across an upgrade that changed the world."""
    import hashlib
    import json

    doc = json.loads(copy.read_text())
    doc["world_hash"] = "sha256:" + "1" * 64
    copy.write_text(json.dumps(doc))
    (copy.parent / "public.json.sha256").write_text("sha256:" + hashlib.sha256(copy.read_bytes()).hexdigest() + "\n")
    return copy


def test_a_cell_of_a_calibration_made_on_another_world_is_refused_naming_both(db, other_world, grading_with):
    grading_with(other_world)
    with pytest.raises(CalibrationError) as refused:
        grading.grading_cell("counter-punch", 7)
    assert refused.value.problem.startswith(f"{other_world} was calibrated on world sha256:{'1' * 64}, but this "
                                            "site runs world sha256:")


def test_a_practice_shift_still_ends_and_is_graded_beside_another_worlds_file(client, db, other_world, grading_with,
                                                                            fast_password_hashing,
                                                                            fresh_console_cache):
    # The practice cell is never in the file: it is calibrated on the spot, so onboarding goes on.
    user = briefed_user("ivo")
    shift = lifecycle.start_shift(user, "practice", 7, practice=True)
    grading_with(other_world)
    client.force_login(user)
    assert client.post(f"/shifts/{shift.pk}/end/").status_code in (200, 302)
    shift.refresh_from_db()
    assert shift.status == Shift.Status.ENDED and shift.score_composite is not None and shift.calibration_hash == ""


def test_the_deadline_sweep_goes_on_past_shifts_it_cannot_grade(db, truncated, copy, grading_with, caplog,
                                                                 fresh_console_cache):
    shifts = [lifecycle.start_shift(briefed_user(name, password=False), "counter-punch", 7, practice=True)
              for name in ("ann", "bob")]
    Shift.objects.filter(pk__in=[s.pk for s in shifts]).update(deadline=timezone.now() - timedelta(minutes=1))
    grading_with(truncated)
    with caplog.at_level(logging.ERROR, logger="shifts.ending"):
        assert sweep() == 0
    logged = [r.getMessage() for r in caplog.records if r.name == "shifts.ending"]
    assert [m.split(": ")[1] for m in logged] == [f"shift {s.pk} not ended" for s in shifts]
    assert all("public.json: not a calibration file (not JSON: " in m for m in logged)
    good = copy.parent / "good.json"
    shutil.copy(PUBLIC, good)
    grading_with(good)
    assert sweep() == 2
    assert set(Shift.objects.values_list("status", flat=True)) == {Shift.Status.ENDED}


@pytest.mark.django_db
def test_import_trials_names_a_bad_calibration_and_goes_on(folder, truncated, settings):  # noqa: F811
    settings.EXPLORER_CALIBRATIONS = [truncated, settings.BASE_DIR / PUBLIC]
    out, err = StringIO(), StringIO()
    call_command("import_trials", str(folder), stdout=out, stderr=err)
    assert "calibration" in err.getvalue() and "public.json left out" in err.getvalue()
    assert "imported" in out.getvalue()
