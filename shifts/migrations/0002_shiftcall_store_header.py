"""Each call keeps its store header typed (``ShiftCall.store_header``).

Calls stored before this migration carry only the header line; it is read into the
typed form once, here (the line's format is the one the core rendered then).  From
now on the typed header comes from the episode, and no code parses the line.
"""
import re

from django.db import migrations, models

_LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d) UTC \| window (?P<window>\d+) of (?P<windows>\d+)"
    r" \| operations left (?P<ops_left>\d+) of (?P<ops_total>\d+) \| cash (?P<cash>\S+)"
    r" \| net assets (?P<net_assets>\S+) \| rating (?P<rating>[\d.]+)(?P<closed> \| store closed)?$")


def _cents(text: str) -> int:
    negative = text.startswith("-")
    digits = text.lstrip("-$").replace(",", "")
    whole, _, frac = digits.partition(".")
    cents = int(whole) * 100 + int((frac + "00")[:2])
    return -cents if negative else cents


def typed(line: str) -> dict | None:
    match = _LINE.fullmatch(line or "")
    if match is None:
        return None
    g = match.groupdict()
    return {"time": g["time"], "window": int(g["window"]), "windows": int(g["windows"]),
            "ops_left": int(g["ops_left"]), "ops_total": int(g["ops_total"]),
            "cash_cents": _cents(g["cash"]), "net_assets_cents": _cents(g["net_assets"]),
            "rating": g["rating"], "closed": bool(g["closed"])}


def fill(apps, schema_editor):
    ShiftCall = apps.get_model("shifts", "ShiftCall")
    for call in ShiftCall.objects.exclude(header="").filter(reached_core=True).only("pk", "header").iterator():
        header = typed(call.header)
        if header is not None:
            ShiftCall.objects.filter(pk=call.pk).update(store_header=header)


class Migration(migrations.Migration):

    dependencies = [
        ('shifts', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='shiftcall',
            name='store_header',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
