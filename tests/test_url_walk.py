"""Every URL, walked as every role: who may see it, and that everyone else is refused.

The URLs are enumerated from the URLconf, so a new URL fails this test until it is
classified in :data:`ALLOWED`. Roles: ``anonymous``; ``participant`` (owns the
shift, is in study A); ``other_participant`` (another participant of study A);
``coordinator_b`` (coordinator of study B only); ``researcher`` (the researchers
group). Two positive controls make sure the walk reaches real pages (a refusal for
everyone would pass trivially): ``coordinator_a`` (coordinator of study A) and the
participant on their own shift.

Every page is requested with GET; for a role that may not use a URL, a POST with an
empty form is refused too. A refusal is a redirect to a sign-in page, 403, 404 or 405.
An allowed role gets an answer below 500 that is not a refusal (400 for a bad query
counts: the compare pages need two trials).
"""
from __future__ import annotations

import pytest
from console_helpers import briefed_user
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import URLResolver, get_resolver
from test_explorer_import import folder  # noqa: F401

from explorer.access import RESEARCHER_GROUP
from explorer.importing import import_trial
from shifts import lifecycle
from studies import assignment, participants
from studies.design import add_member, create_study
from studies.export_jobs import request_export
from studies.models import Role

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")

ROLES = ("anonymous", "participant", "other_participant", "coordinator_b", "researcher", "coordinator_a")
SIGNED_IN = frozenset(ROLES) - {"anonymous"}
EVERYONE = frozenset(ROLES)
RESEARCHER = frozenset({"researcher"})
OWNER = frozenset({"participant"})
COORD_A = frozenset({"coordinator_a"})
PARTICIPANTS = frozenset({"participant", "other_participant"})
NOBODY = frozenset()

# URL name (or route, for unnamed ones) -> (the roles that may GET it, the roles that may POST to it).
ALLOWED = {
    **{name: (RESEARCHER, NOBODY) for name in (
        "explorer:trials", "explorer:trial", "explorer:trial_chart", "explorer:trial_components",
        "explorer:trial_windows", "explorer:trial_actions", "explorer:trial_events", "explorer:trial_call",
        "explorer:compare", "explorer:compare_chart", "explorer:compare_components", "explorer:ladder",
        "explorer:ladder_chart", "explorer:ladder_download")},
    "studies:list": (SIGNED_IN, NOBODY),  # lists only the studies the user holds a staff role in
    "studies:new": (NOBODY, NOBODY),  # staff only
    "studies:me": (PARTICIPANTS, PARTICIPANTS),  # giving consent is a POST
    "studies:join": (EVERYONE, EVERYONE),  # the link is the capability (not POSTed here: it signs in)
    **{name: (COORD_A, NOBODY) for name in (
        "studies:detail", "studies:monitor", "studies:monitor_rows", "studies:leaderboard", "studies:audit",
        "studies:leaderboard_svg", "studies:pay", "studies:participant", "studies:attempt_shift")},
    "studies:enter": (EVERYONE, EVERYONE),  # the study link is public; an unknown slug is a 400 for anyone
    "studies:me_complete": (PARTICIPANTS, NOBODY),
    **{name: (NOBODY, PARTICIPANTS) for name in ("studies:me_next", "studies:me_return")},
    "studies:exports": (COORD_A, COORD_A),
    # POST-only actions: nobody GETs them (405).
    **{name: (NOBODY, COORD_A) for name in (
        "studies:member_add", "studies:member_remove", "studies:close", "studies:reopen", "studies:quota_set", "studies:participant_add", "studies:invite", "studies:revoke",
        "studies:assign", "studies:assign_next", "studies:attempt_act", "studies:select_by_rule",
        "studies:monitor_act", "studies:entry_settings", "studies:pay_approve", "studies:bonus_file",
        "studies:payments_file", "studies:import", "studies:invite_many", "studies:bulk_attempts",
        "studies:bulk_assign", "studies:withdraw", "studies:consent_publish", "studies:rehearse")},
    **{name: (NOBODY, OWNER) for name in ("console:shift_start", "console:shift_call", "console:shift_pause",
                                          "console:shift_resume", "console:shift_end")},
    "console:logout": (NOBODY, SIGNED_IN),
    "studies:export_file": (NOBODY, NOBODY),  # the job has not run: no file for anyone
    "signin": (EVERYONE, EVERYONE), "console:login": (EVERYONE, EVERYONE), "console:healthz": (EVERYONE, NOBODY),
    "console:home": (EVERYONE, NOBODY),  # anonymous visitors get the sign-in invitation
    "console:briefing": (SIGNED_IN, SIGNED_IN),  # acknowledging is a POST
    **{name: (OWNER, NOBODY) for name in ("console:shift", "console:shift_call_detail", "console:shift_call_status",
                                          "console:shift_history", "console:shift_panels",
                                          "console:shift_bar")},
}
# Not walked: the admin (its own staff-only login guards every page; tested in test_studies_records).
SKIPPED_PREFIXES = ("admin/",)
# Posted with a well-formed body, so the refusal is about whose record it is, not the form:
# a malformed call is answered 400 before the shift is read, the same for every shift id.
WELL_FORMED_POSTS = {"console:shift_call": {"tool": "store_status", "call_id": "walk-call-0001"}}
# Never POSTed: they sign someone in or out rather than act on a record.
NOT_POSTED = {"studies:join", "console:logout", "signin", "console:login"}


def url_patterns():
    def walk(patterns, prefix="", ns=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                inner = f"{ns}:{p.namespace}".strip(":") if p.namespace else ns
                yield from walk(p.url_patterns, prefix + str(p.pattern), inner)
            else:
                route = prefix + str(p.pattern)
                yield route, (f"{ns}:{p.name}" if ns else p.name) or route
    return [(r, n) for r, n in walk(get_resolver().url_patterns) if not r.startswith(SKIPPED_PREFIXES)]


@pytest.fixture
def world(db, folder):  # noqa: F811
    User = get_user_model()
    admin = User.objects.create_superuser("walk-admin", password=None)
    study_a = create_study(admin, "Study A", ["steady"], [7])
    study_b = create_study(admin, "Study B", ["steady"], [7])
    users = {"participant": briefed_user("walk-p1"), "other_participant": briefed_user("walk-p2"),
             "coordinator_b": User.objects.create_user("walk-cb"), "researcher": User.objects.create_user("walk-r"),
             "coordinator_a": User.objects.create_user("walk-ca")}
    add_member(admin, study_b, users["coordinator_b"], Role.COORDINATOR)
    add_member(admin, study_a, users["coordinator_a"], Role.COORDINATOR)
    users["researcher"].groups.add(Group.objects.create(name=RESEARCHER_GROUP))
    p1 = participants.add_participant(admin, study_a, "P1", user=users["participant"])
    participants.add_participant(admin, study_a, "P2", user=users["other_participant"])
    attempt = assignment.assign(admin, p1, study_a.cells.get())
    shift = lifecycle.start_shift(users["participant"], "counter-punch", 7, practice=True)
    issued = participants.invite(admin, participants.add_participant(admin, study_a, "P3"))
    job = request_export(admin, study_a)
    trial = import_trial(folder).trial
    values = {"shifts/<int:pk>/": shift.pk, "<int:seq>": 1, "studies/<rowid:pk>/": study_a.pk,
              "<rowid:attempt_pk>": attempt.pk, "<rowid:invitation_pk>": issued.invitation.pk,
              "<rowid:job_pk>": job.pk, "<str:name>": "attempts.csv", "<str:token>": issued.token,
              "<rowid:participant_pk>": p1.pk, "<slug:slug>": "no-such-study",
              "trials/<id:pk>/": trial.pk, "<id:seq>": 1, "<slug:measure>": "cash", "<fmt:fmt>": "csv",
              "<str:call_id>": "walk-call-0001"}
    return users, values


def concrete(route: str, values: dict) -> str:
    url = "/" + route
    for placeholder, value in values.items():
        if placeholder.endswith("/"):
            url = url.replace(placeholder, placeholder.split("<")[0] + f"{value}/")
        else:
            url = url.replace(placeholder, str(value))
    assert "<" not in url, f"no sample value for {url}"
    return url


def refused(response) -> bool:
    if response.status_code in (302, 301):
        return "login" in response["Location"]
    return response.status_code in (403, 404, 405)


def client_for(role, users):
    client = Client(raise_request_exception=False)
    if role != "anonymous":
        client.force_login(users[role])
    return client


def test_every_url_is_classified():
    unclassified = sorted({name for _route, name in url_patterns()} - set(ALLOWED))
    assert not unclassified, f"classify these URLs in ALLOWED: {unclassified}"


def test_every_url_as_every_role(world):
    users, values = world
    problems = []
    walked = 0
    for role in ROLES:
        client = client_for(role, users)
        for route, name in url_patterns():
            url = concrete(route, values)
            response = client.get(url)
            walked += 1
            may_get, may_post = ALLOWED[name]
            if role in may_get:
                if response.status_code >= 500 or refused(response):
                    problems.append(f"{role} GET {url} ({name}): {response.status_code}, expected a page")
            elif not refused(response):
                problems.append(f"{role} GET {url} ({name}): {response.status_code}, expected a refusal")
            if role not in may_post and name not in NOT_POSTED:
                posted = client.post(url, WELL_FORMED_POSTS.get(name, {}))
                if not refused(posted):
                    problems.append(f"{role} POST {url} ({name}): {posted.status_code}, expected a refusal")
    assert walked == len(ROLES) * len(url_patterns())
    assert not problems, "\n".join(problems)


def test_huge_ids_in_any_url_are_not_found(world):
    users, values = world
    huge = {k: (10 ** 30 if isinstance(v, int) else v) for k, v in values.items()}
    client = client_for("researcher", users)
    client.force_login(get_user_model().objects.get(username="walk-admin"))
    failures = []
    for route, _name in url_patterns():
        if "<" not in route:
            continue
        response = client.get(concrete(route, huge))
        if response.status_code >= 500:
            failures.append(f"{route}: {response.status_code}")
    assert not failures, failures
