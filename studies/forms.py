"""Input validation for the study views; each form's errors name the field and the problem."""
from __future__ import annotations

from django import forms

from environment.errors import SEED_MAX, InvalidSeed, check_seed

from . import design, pay
from .attempts import MAX_DEADLINE_CHANGE_MINUTES
from .errors import StudyError
from .models import AssignmentPolicy, Participant, Role, SelectionRule, Study

MINUTES_RANGE = (f"A deadline moves by 1 to {MAX_DEADLINE_CHANGE_MINUTES} minutes at a time "
                 "(a negative number shortens it).")
ATTEMPT_ACTIONS = ("retry", "reassign", "extend", "force_end", "invalidate", "select")


class StudyForm(forms.Form):
    name = forms.CharField(max_length=120)
    tasks = forms.MultipleChoiceField(choices=(), error_messages={
        "invalid_choice": "%(value)s is not a task a study can use (the practice task is never a study cell); "
                          "choose an eval or train task"})
    seeds = forms.CharField(max_length=200, help_text="space-separated, e.g. 7 11 13")
    quota = forms.IntegerField(min_value=1, max_value=100, initial=1)
    policy = forms.ChoiceField(choices=AssignmentPolicy.choices)
    random_seed = forms.IntegerField(initial=0, min_value=0, max_value=SEED_MAX, error_messages={
        "min_value": f"give a whole number from 0 to {SEED_MAX:,} (it fixes the order of random assignment)",
        "max_value": f"give a whole number from 0 to {SEED_MAX:,} (it fixes the order of random assignment)"})

    def __init__(self, *args, **kwargs):
        from environment.tasks import all_tasks

        super().__init__(*args, **kwargs)
        self.fields["tasks"].choices = [(t.id, t.id) for t in all_tasks()]

    def clean_tasks(self):
        tasks = self.cleaned_data["tasks"]
        _refuse_repeats("task", tasks)
        return tasks

    def clean_seeds(self):
        raw = self.cleaned_data["seeds"].replace(",", " ").split()
        if not raw or not all(x.lstrip("-").isdigit() for x in raw):
            raise forms.ValidationError("seeds must be whole numbers separated by spaces")
        try:
            seeds = [check_seed(int(x)) for x in raw]
        except InvalidSeed as exc:
            raise forms.ValidationError(exc.message) from None
        _refuse_repeats("seed", seeds)
        return sorted(seeds)


def _refuse_repeats(noun: str, values: list) -> None:
    problem = design.repeated(noun, values)
    if problem is not None:
        raise forms.ValidationError(problem)


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=[(r.value, r.label) for r in Role if r != Role.PARTICIPANT])


class QuotaForm(forms.Form):
    cell = forms.IntegerField(min_value=1)
    quota = forms.IntegerField(min_value=0, max_value=100)


class ParticipantForm(forms.Form):
    label = forms.CharField(max_length=80)
    email = forms.EmailField(label="E-mail", required=False, max_length=254)  # the model's column
    years_ecommerce = forms.IntegerField(label="Years in e-commerce", min_value=0, max_value=60, required=False)
    role = forms.CharField(max_length=200, required=False)
    platforms = forms.CharField(max_length=200, required=False)


class InviteForm(forms.Form):
    participant = forms.IntegerField(min_value=1)
    days = forms.IntegerField(min_value=1, max_value=90, initial=7)

    @property
    def row(self) -> int | None:
        """The participant row the form was posted from (the page shows it there, as typed)."""
        raw = str(self["participant"].value() or "")
        return int(raw) if raw.isdigit() else None


class RevokeForm(forms.Form):
    reason = forms.CharField(max_length=500)

    def __init__(self, *args, invitation_pk: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.row = invitation_pk  # the invitation row the form was posted from


class AssignForm(forms.Form):
    participant = forms.IntegerField(min_value=1)
    cell = forms.IntegerField(min_value=1)
    practice = forms.BooleanField(required=False)


class AssignNextForm(forms.Form):
    policy = forms.ChoiceField(choices=AssignmentPolicy.choices, required=False)


class AttemptActionForm(forms.Form):
    """An action on one attempt; ``to`` (a reassignment's target) is cleaned to one of
    the study's participants (:func:`~studies.attempts.reassign` decides whether the
    attempt may go to them)."""
    action = forms.ChoiceField(choices=[(a, a) for a in ATTEMPT_ACTIONS])
    reason = forms.CharField(max_length=1000, required=False)
    minutes = forms.IntegerField(required=False, min_value=-MAX_DEADLINE_CHANGE_MINUTES,
                                 max_value=MAX_DEADLINE_CHANGE_MINUTES, error_messages={
                                     "min_value": MINUTES_RANGE + " %(show_value)s is too many.",
                                     "max_value": MINUTES_RANGE + " %(show_value)s is too many.",
                                     "invalid": MINUTES_RANGE})
    to = forms.IntegerField(label="Reassign to", required=False, min_value=1)

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.study = study

    def clean_to(self) -> Participant | None:
        """The target, resolved within the study; whether the attempt may go to them is
        the domain's rule (:func:`studies.attempts.reassign` refuses with the reason)."""
        pk = self.cleaned_data["to"]
        if pk is None:
            return None
        target = self.study.participants.filter(pk=pk).first()
        if target is None:
            raise forms.ValidationError(f"study {self.study.name!r} has no participant {pk}; choose one from the list")
        return target

    def clean(self):
        data = super().clean()
        action = data.get("action")
        if action == "extend" and "minutes" not in self.errors and not data.get("minutes"):
            self.add_error("minutes", ("Give the minutes to move the deadline by. " if data.get("minutes") is None
                                       else "0 minutes does not change the deadline. ") + MINUTES_RANGE)
        if action == "reassign" and not data.get("to"):
            self.add_error("to", "choose the participant to reassign to")
        return data


class MonitorActionForm(AttemptActionForm):
    attempt = forms.IntegerField(label="Shift", min_value=1, error_messages={"required": "choose the shift to act on"})
    action = forms.ChoiceField(choices=[(a, a) for a in ("extend", "force_end", "invalidate", "reassign")])


class SelectRuleForm(forms.Form):
    rule = forms.ChoiceField(choices=[(SelectionRule.LATEST, "latest"), (SelectionRule.EARLIEST, "earliest")])


class ExportForm(forms.Form):
    include_practice = forms.BooleanField(required=False)
    include_bots = forms.BooleanField(required=False)
    include_coached = forms.BooleanField(required=False, initial=True)
    include_invalid = forms.BooleanField(required=False)
    deidentified = forms.BooleanField(required=False)


class ConsentForm(forms.Form):
    version = forms.IntegerField(min_value=1)
    agree = forms.BooleanField(label="Consent", error_messages={"required": "tick the box to give your consent"})


def errors_text(form: forms.Form) -> str:
    """The form's errors in one line, each field named by its label (as the page shows it)."""
    return "; ".join(f"{form[field].label}: {' '.join(map(str, errs))}" if field != "__all__"
                     else " ".join(map(str, errs)) for field, errs in form.errors.items())


CODE_FORMAT = "at most 40 letters, digits, '_' or '-'"


class EntryForm(forms.Form):
    """The study link and pay rule (amounts in cents/pence)."""
    entry_open = forms.BooleanField(label="Open the study link", required=False)
    completion_url = forms.URLField(label="Completion URL", max_length=300, assume_scheme="https",
                                    initial="https://app.prolific.com/submissions/complete")
    completion_code = forms.RegexField(r"^[A-Za-z0-9_-]{0,40}$", required=False,
                                       error_messages={"invalid": CODE_FORMAT})
    return_code = forms.RegexField(r"^[A-Za-z0-9_-]{0,40}$", required=False,
                                   error_messages={"invalid": CODE_FORMAT})
    base_pay_cents = forms.IntegerField(label="Base pay (pence)", min_value=0, max_value=100_000, initial=0)
    bonus_bands = forms.CharField(max_length=500, required=False, help_text="min_score:pence, e.g. 0.6:50, 0.8:150")
    fault_compensation_cents = forms.IntegerField(label="Fault compensation (pence)", min_value=0, max_value=100_000,
                                                  initial=0)
    show_threshold_to_participants = forms.BooleanField(label="Show participants the pass threshold", required=False)
    reason = forms.CharField(max_length=1000)

    @classmethod
    def for_study(cls, study: Study) -> EntryForm:
        """The form unbound, showing the study's current settings."""
        return cls(initial={
            "entry_open": study.entry_open, "completion_url": study.completion_url,
            "completion_code": study.completion_code, "return_code": study.return_code,
            "base_pay_cents": study.base_pay_cents, "bonus_bands": pay.bands_text(study.bonus_bands),
            "fault_compensation_cents": study.fault_compensation_cents,
            "show_threshold_to_participants": study.show_threshold_to_participants})

    def clean_bonus_bands(self) -> list[list]:
        try:
            return pay.parse_bands(self.cleaned_data["bonus_bands"])
        except StudyError as exc:
            raise forms.ValidationError(str(exc)) from exc


class EnterForm(forms.Form):
    version = forms.IntegerField(min_value=1, required=False)
    agree = forms.BooleanField(label="Consent", error_messages={"required": "tick the box to give your consent"})


class ImportForm(forms.Form):
    file = forms.FileField(label="Participants CSV")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > 2_000_000:
            raise forms.ValidationError("the file is larger than 2 MB; split it")
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise forms.ValidationError("the file is not UTF-8 text; save it as CSV UTF-8") from exc


class BulkInviteForm(forms.Form):
    participants = forms.CharField(required=False, help_text="ids; empty = everyone without an account")
    days = forms.IntegerField(min_value=1, max_value=90, initial=7)


class BulkAttemptForm(forms.Form):
    action = forms.ChoiceField(choices=[("invalidate", "invalidate"), ("select", "select")])
    reason = forms.CharField(max_length=1000)


class BulkAssignForm(forms.Form):
    reason = forms.CharField(max_length=1000)


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=1000)


class ConsentPublishForm(forms.Form):
    text = forms.CharField(label="New consent version", max_length=20_000)


def ids_of(values) -> list[int]:
    """Row ids from a list of form values; a value that is not a whole number is refused."""
    out = []
    for value in values:
        for part in str(value).replace(",", " ").split():
            if not part.isdigit() or len(part) > 18:
                raise forms.ValidationError(f"{part!r} is not a row id")
            out.append(int(part))
    return out


class RehearsalForm(forms.Form):
    bots = forms.IntegerField(label="Attempts", min_value=1, max_value=20, initial=3)
    skill = forms.ChoiceField(choices=[(k, k) for k in ("idle", "novice", "clerk", "expert")], initial="clerk")
