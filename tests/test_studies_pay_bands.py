"""Bonus bands as a coordinator types them: each score has one band, every score is a number."""
import pytest

from studies import pay
from studies.errors import StudyError


def test_bands_are_sorted_by_score():
    assert pay.parse_bands("0.8:150, 0.6:50") == [["0.6", 50], ["0.8", 150]]


def test_two_bands_at_the_same_score_are_refused_naming_both():
    with pytest.raises(StudyError) as refused:
        pay.parse_bands("0.6:50, 0.8:150, 0.60:80")
    assert str(refused.value) == ("bonus bands 0.6:50 and '0.60:80' start at the same score; give each score one band")


@pytest.mark.parametrize("low", ["NaN", "Infinity", "-Infinity", "sNaN"])
def test_a_score_that_is_not_a_finite_number_is_refused(low):
    with pytest.raises(StudyError) as refused:
        pay.parse_bands(f"{low}:50")
    assert str(refused.value) == (f"bonus band '{low}:50': the score must be between 0 and 1 and the pence "
                                  "not negative")
