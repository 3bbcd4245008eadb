"""manage.py load_demo: the demo study for `make run`."""
from django.contrib.auth import get_user_model
from django.core.management import call_command

from studies.models import Attempt, Study


def test_load_demo_creates_the_demo_study_once(db):
    call_command("load_demo")
    call_command("load_demo")
    study = Study.objects.get()
    assert study.cells.count() == 6
    # the console's practice shift plays the practice task, which is no cell: nothing to adopt
    assert not Attempt.objects.exists()
    assert study.participants.get().label == "demo participant"


def test_demo_coordinator_sees_the_study(db, client):
    call_command("load_demo")
    client.force_login(get_user_model().objects.get(username="coordinator"))
    html = client.get(f"/studies/{Study.objects.get().pk}/").content.decode()
    assert "demo participant" in html and "steady/11" in html and "Your role: coordinator" in html
