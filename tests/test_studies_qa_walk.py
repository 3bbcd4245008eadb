"""Bugs found walking a study as its coordinator in a browser (import, study link, forest plot)."""
from django.core.files.uploadedfile import SimpleUploadedFile
from test_studies_support import admin, coordinator, study  # noqa: F401

from studies import bulk


def test_import_refuses_a_prolific_pid_another_participant_holds(client, study, coordinator):
    """One Prolific account is one participant: a second row with the same PROLIFIC_PID
    (in the file or already in the study) is refused, naming the holder."""
    reports = bulk.import_participants(coordinator, study, "label,PROLIFIC_PID\nAlice,pidA\nFrank,pidA\nHeidi,pidH\n")
    assert [r.ok for r in reports] == [True, False, True]
    assert "PROLIFIC_PID pidA already belongs to participant 'Alice'" in reports[1].message
    client.force_login(coordinator)
    upload = SimpleUploadedFile("p.csv", b"label,PROLIFIC_PID\nGrace,pidH\n", content_type="text/csv")
    html = client.post(f"/studies/{study.pk}/import/", {"file": upload}).content.decode()
    assert "0 added, 1 refused" in html and "already belongs to participant &#x27;Heidi&#x27;" in html
    assert sorted(study.participants.values_list("label", flat=True)) == ["Alice", "Heidi"]
