"""studies.reference on its own: no Django, definitions checked on small hand-made rows."""
import subprocess
import sys
from decimal import Decimal

import pytest

from studies import reference
from studies.reference import AttemptRow

D = Decimal


def row(cell, person, composite, selected=True, order=(1,), threshold="0.5", **components):
    return AttemptRow(cell=cell, task=cell.split("/")[0], person=person, composite=D(composite),
                      threshold=D(threshold), selected=selected, order=order,
                      components={k: (D(v) if v is not None else None) for k, v in components.items()})


ROWS = [
    row("a/1", "heavy", "0.40"), row("a/2", "heavy", "0.50"), row("b/1", "heavy", "0.60"),
    row("b/2", "light", "0.90"),
    row("c/1", "light", "0.30", selected=False, order=(1,)), row("c/1", "light", "0.80", order=(2,)),
]


def test_module_imports_no_django():
    code = "import sys, studies.reference; print(any(m.startswith('django') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_equal_cell_mean():
    assert reference.compute(ROWS, resamples=50).equal_cell.value == D("0.640000")  # (.4+.5+.6+.9+.8)/5


def test_equal_person_mean():
    # heavy: (.4+.5+.6)/3 = .5 ; light: (.9+.8)/2 = .85 ; mean .675
    assert reference.compute(ROWS, resamples=50).equal_person.value == D("0.675000")


def test_earliest_attempt_mean_uses_the_first_completed_attempt_selected_or_not():
    assert reference.compute(ROWS, resamples=50).earliest.value == D("0.540000")  # c/1 counts 0.30


def test_pass_rate_against_each_cells_threshold():
    rows = [row("a/1", "p", "0.70", threshold="0.72"), row("a/2", "p", "0.72", threshold="0.72")]
    assert reference.compute(rows, resamples=50).pass_rate.value == D("0.500000")


def test_per_task_means():
    per_task = reference.compute(ROWS, resamples=50).per_task
    assert {t: e.value for t, e in per_task.items()} == {"a": D("0.450000"), "b": D("0.750000"), "c": D("0.800000")}


def test_component_mean_skips_undefined_rates():
    rows = [row("a/1", "p", "0.5", on_time_rate="0.8"), row("a/2", "p", "0.5", on_time_rate=None)]
    est = reference.compute(rows, resamples=50).components["on_time_rate"]
    assert (est.value, est.n) == (D("0.800000"), 1)


def test_two_selected_attempts_in_a_cell_are_refused():
    with pytest.raises(ValueError, match="cell a/1 has 2 selected attempts; exactly one is allowed"):
        reference.compute([row("a/1", "p", "0.5"), row("a/1", "q", "0.6")])


def test_bootstrap_is_deterministic_for_a_seed():
    a = reference.compute(ROWS, seed=5, resamples=2000)
    b = reference.compute(ROWS, seed=5, resamples=2000)
    assert a == b


def test_bootstrap_interval_depends_on_the_seed():
    a = reference.compute(ROWS, seed=5, resamples=2000).equal_cell
    b = reference.compute(ROWS, seed=6, resamples=2000).equal_cell
    assert (a.low, a.high) != (b.low, b.high)


def test_interval_brackets_the_point_estimate():
    e = reference.compute(ROWS, resamples=2000).equal_cell
    assert e.low <= e.value <= e.high


def test_interval_of_identical_cells_is_a_point():
    rows = [row(f"a/{i}", "p", "0.5") for i in range(5)]
    e = reference.compute(rows, resamples=500).equal_cell
    assert (e.low, e.value, e.high) == (D("0.500000"),) * 3


def test_anchor_figures_average_cells_equally():
    est = reference.anchor_figures({"a/1": {"rb": D("0.6")}, "a/2": {"rb": D("0.8")}}, {"a/1": "a", "a/2": "a"},
                                   resamples=100)
    assert est["rb"].value == D("0.700000")


def test_trial_rows_average_within_a_cell_first():
    trials = [("a/1", D("0.2"), "m"), ("a/1", D("0.4"), "m"), ("a/2", D("0.9"), "m")]
    assert reference.trial_figures(trials, {}, resamples=100)["m"].value == D("0.600000")  # (.3 + .9)/2


def test_component_means_are_of_the_parts_the_caller_names():
    rows = [row("a/1", "p", "0.4", business="0.2", continuity="1"), row("a/2", "q", "0.6", business="0.4")]
    assert {k: e.value for k, e in reference.compute(rows, components=["business"], resamples=50).components.items()
            } == {"business": D("0.300000")}


def test_by_default_the_component_means_are_of_the_parts_the_rows_carry():
    rows = [row("a/1", "p", "0.4", business="0.2", continuity="1"), row("a/2", "q", "0.6", business="0.4")]
    assert list(reference.compute(rows, resamples=50).components) == ["business", "continuity"]
