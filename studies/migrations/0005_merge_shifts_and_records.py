"""Joins two lines of migrations written side by side: the attempt's shift moving to the
``shifts`` app (0002_attempt_shift_in_shifts_app) and the append-only audit log with
invitation sessions (0002 to 0004). They touch different tables; nothing to do here."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('studies', '0002_attempt_shift_in_shifts_app'),
        ('studies', '0004_invitation_sessions'),
    ]

    operations = []
