"""The explorer's SVG charts draw every value they are given."""
import re

from explorer.charts import Series, window_chart


def _chart(points):
    return window_chart(title="Cash", unit="usd", series=[Series("cash", "#0f766e", points)], x_max=4)


def test_a_series_of_one_value_is_drawn_as_a_dot():
    svg = _chart([(0, 120.0)])
    assert len(re.findall(r'<circle class="lone-point"', svg)) == 1 and "<polyline" not in svg


def test_a_value_between_two_gaps_is_a_dot_and_runs_are_lines():
    svg = _chart([(0, 1.0), (1, 2.0), (2, None), (3, 5.0), (4, None)])
    assert len(re.findall("<polyline", svg)) == 1 and len(re.findall('class="lone-point"', svg)) == 1
