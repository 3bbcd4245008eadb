"""Bugs found walking a study as its coordinator in a browser (import, study link, forest plot)."""
import xml.etree.ElementTree as ET
from decimal import Decimal
from types import SimpleNamespace

from django.core.files.uploadedfile import SimpleUploadedFile
from test_studies_support import admin, cell, coordinator, make_user, study  # noqa: F401

from studies import assignment, bulk, entry, participants, pay
from studies import attempts as attempt_actions
from studies.completion import completion_code
from studies.design import add_consent_version, add_member
from studies.forest import forest_svg
from studies.models import AuditAction, AuditEvent, Role


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


def test_invitation_link_does_not_record_a_prolific_pid_another_participant_holds(client, study, coordinator):
    """Accepting an invitation whose link carries another participant's PROLIFIC_PID used
    to record it, so two people shared one Prolific id; it is now left out and noted."""
    bulk.import_participants(coordinator, study, "label,PROLIFIC_PID\nHeidi,pidH\nIvan,\n")
    ivan = study.participants.get(label="Ivan")
    issued = participants.invite(coordinator, ivan)
    response = client.post(f"/studies/join/{issued.token}/?PROLIFIC_PID=pidH&SESSION_ID=sessX")
    assert response.status_code == 302
    ivan.refresh_from_db()
    assert ivan.user_id is not None and ivan.external_ids == {"SESSION_ID": "sessX"}
    assert list(study.participants.filter(external_ids__PROLIFIC_PID="pidH").values_list("label", flat=True)) == [
        "Heidi"]
    event = AuditEvent.objects.get(action=AuditAction.INVITATION_ACCEPTED, participant=ivan)
    assert event.detail["prolific_pid_held_by_another"] is True


def test_study_link_does_not_greet_an_imported_pid_as_returning(client, study, coordinator, admin):
    """A PID the team imported (no account yet) has never entered: the study link's page
    does not say "Welcome back" to it (its POST is refused: the invitation signs it in)."""
    add_consent_version(admin, study, "You run a simulated store for one shift.")
    entry.configure(coordinator, study, entry_open=True, completion_url="https://app.prolific.com/submissions/complete",
                    completion_code="C0MPLETE", return_code="RETURN12", base_pay_cents=500,
                    bonus_bands=pay.parse_bands("0:25"), fault_compensation_cents=0, reason="open")
    study.refresh_from_db()
    bulk.import_participants(coordinator, study, "label,PROLIFIC_PID,SESSION_ID\nAlice,pidA,sessA\n")
    url = f"/studies/s/{study.entry_slug}/?PROLIFIC_PID=pidA&STUDY_ID=s1&SESSION_ID=sessA"
    html = client.get(url).content.decode()
    assert "Welcome back" not in html and "Give consent and start" in html
    # Someone who entered through the link is still greeted on return.
    assert client.post(f"/studies/s/{study.entry_slug}/?PROLIFIC_PID=pidB&SESSION_ID=sessB",
                       {"version": 1, "agree": "on"}).status_code == 302
    client.logout()
    assert "Welcome back" in client.get(f"/studies/s/{study.entry_slug}/?PROLIFIC_PID=pidB&SESSION_ID=sessB"
                                        ).content.decode()


def test_forest_plot_label_column_fits_the_longest_name():
    """'Humans (equal-person mean over 12 people)' was drawn past the SVG's left edge."""
    def entry_(name, value):
        est = SimpleNamespace(value=Decimal(value), low=Decimal(value), high=Decimal(value), n=3)
        return SimpleNamespace(name=name, kind="human", estimate=est)

    long_name = "Humans (equal-person mean over 12 people)"
    svg = forest_svg([entry_("rule-based", "0.6"), entry_(long_name, "0.4")])
    root = ET.fromstring(svg)
    ns = {"s": "http://www.w3.org/2000/svg"}
    for label in root.findall(".//s:text[@class='label']", ns):
        # measured in Chromium: 12px sans-serif runs about 5.8 px a character
        assert float(label.get("x")) >= 6.5 * len(label.text), label.text
    circles = root.findall(".//s:circle", ns)
    assert all(float(c.get("cx")) <= float(root.get("width")) for c in circles)


def test_unknown_team_username_says_what_to_do(client, admin, study):
    client.force_login(admin)
    html = client.post(f"/studies/{study.pk}/members/", {"username": "Coordinator", "role": "reviewer"},
                       follow=True).content.decode()
    assert "no user named &#x27;Coordinator&#x27;: check the spelling" in html
    assert "create the account in the admin first" in html


def test_new_study_form_says_how_to_write_the_seeds(client, admin):
    client.force_login(admin)
    assert "space-separated, e.g. 7 11 13" in client.get("/studies/new/").content.decode()


def test_explorer_pages_name_the_sites_icon(client, admin):
    """Without it every explorer page sent the browser to /favicon.ico, a 404."""
    client.force_login(admin)  # a superuser is a researcher
    assert 'rel="icon"' in client.get("/explorer/").content.decode()


def test_study_navigation_links_only_to_pages_the_role_may_open(client, admin, study):
    """A researcher's study page linked to Monitor and Pay (both 403 for them), a reviewer's to Exports and Pay."""
    pages = {"Monitor": "monitor/", "Exports": "exports/", "Pay": "pay/"}
    for role, expected in ((Role.RESEARCHER, {"Exports"}), (Role.REVIEWER, {"Monitor"}),
                           (Role.COORDINATOR, {"Monitor", "Exports", "Pay"})):
        user = make_user(f"team-{role}")
        add_member(admin, study, user, role)
        client.force_login(user)
        html = client.get(f"/studies/{study.pk}/leaderboard/").content.decode()
        linked = {name for name, path in pages.items() if f'href="/studies/{study.pk}/{path}"' in html}
        assert linked == expected, role
        for name in linked:
            assert client.get(f"/studies/{study.pk}/{pages[name]}").status_code == 200, (role, name)


def test_import_says_how_to_fix_a_header_excel_wrote(client, study, coordinator):
    """A semicolon-separated file (Excel in many locales) and a capitalised header were both
    told they lacked a 'label' column, which each of them has."""
    client.force_login(coordinator)

    def refusal(content: bytes) -> str:
        upload = SimpleUploadedFile("p.csv", content, content_type="text/csv")
        return client.post(f"/studies/{study.pk}/import/", {"file": upload}, follow=True).content.decode()

    html = refusal("label;email;years_ecommerce\nJosé;jose@example.org;4\n".encode())
    assert "separated by semicolons, not commas; save the file as CSV with commas" in html
    assert "separated by tabs" in refusal(b"label\temail\nKim\tkim@example.org\n")
    html = refusal(b"Label,Email\nKim,kim@example.org\n")
    assert "&#x27;Label&#x27; should be &#x27;label&#x27;" in html and "&#x27;Email&#x27; should be &#x27;email&#x27;" in html
    html = refusal(b"label,prolific_pid\nKim,p1\n")
    assert "unknown column: prolific_pid" in html and "&#x27;prolific_pid&#x27; should be &#x27;PROLIFIC_PID&#x27;" in html
    assert not study.participants.exists()


def test_refused_team_and_participant_forms_say_what_to_do_and_keep_the_input(client, admin, study):
    client.force_login(admin)
    response = client.post(f"/studies/{study.pk}/members/", {"username": "Rita", "role": "researcher"})
    html = response.content.decode()
    assert response.status_code == 400 and 'name="username" required value="Rita"' in html
    assert '<option value="researcher" selected>' in html
    client.post(f"/studies/{study.pk}/participants/", {"label": "Alice"})
    html = client.post(f"/studies/{study.pk}/participants/", {"label": "alice", "role": "buyer"},
                       follow=True).content.decode()
    assert "already has a participant labelled &#x27;alice&#x27; (labels differ by more than case); choose another label" in html


def test_an_attempt_closed_by_the_participants_own_return_gives_no_completion_code(client, study, coordinator, cell):
    """'I want to stop' closed the unstarted attempt, and the participant's page then showed
    its completion code, marked 'ended by the study team or a platform fault, not by you'."""
    entry.configure(coordinator, study, entry_open=True, completion_url="https://app.prolific.com/submissions/complete",
                    completion_code="C0MPLETE", return_code="RETURN12", base_pay_cents=0, bonus_bands=[],
                    fault_compensation_cents=0, reason="open")
    study.refresh_from_db()
    client.post(f"/studies/s/{study.entry_slug}/?PROLIFIC_PID=pidR&SESSION_ID=sessR", {"agree": "on"})
    person = study.participants.get()
    attempt = assignment.create_attempt(None, person, cell)
    assert client.post("/studies/me/return/").status_code == 302
    attempt.refresh_from_db()
    assert attempt.status == "abandoned" and completion_code(person.user, attempt) is None
    html = client.get(f"/studies/me/?study={study.pk}").content.decode()
    assert attempt.completion_code not in html and "not by you" not in html
    assert "none: you left the study before this shift started" in html
    # Closed by the team before it started, the code is still given.
    other = make_user("walk-other")
    kept = participants.add_participant(coordinator, study, "Other", user=other)
    closed = assignment.create_attempt(None, kept, cell)
    attempt_actions.force_end(coordinator, closed, "cell withdrawn")
    closed.refresh_from_db()
    assert completion_code(other, closed) == closed.completion_code


def test_returning_the_study_asks_before_it_is_done(client, study, coordinator):
    """'I want to stop (return the study)' returned the study on one click, with no question."""
    entry.configure(coordinator, study, entry_open=True, completion_url="https://app.prolific.com/submissions/complete",
                    completion_code="C0MPLETE", return_code="RETURN12", base_pay_cents=0, bonus_bands=[],
                    fault_compensation_cents=0, reason="open")
    study.refresh_from_db()
    client.post(f"/studies/s/{study.entry_slug}/?PROLIFIC_PID=pidQ&SESSION_ID=sessQ", {"agree": "on"})
    html = client.get(f"/studies/me/?study={study.pk}").content.decode()
    form = html[html.index('id="leave-form"'):]
    form = form[:form.index("</form>")]
    assert "return confirm('Stop taking part and return the study" in form and 'id="leave"' in form


def test_leaderboard_with_bots_links_back_to_the_figures_without_them(client, admin, study):
    """With bots included the page still offered only 'include bots', linking to itself."""
    client.force_login(admin)
    plain = client.get(f"/studies/{study.pk}/leaderboard/").content.decode()
    assert '<a href="?include_bots=1" id="bots-toggle">include bots</a>' in plain
    with_bots = client.get(f"/studies/{study.pk}/leaderboard/?include_bots=1").content.decode()
    assert f'<a href="/studies/{study.pk}/leaderboard/" id="bots-toggle">leave bots out</a>' in with_bots
    assert "include_bots=1\" id=\"bots-toggle" not in with_bots
