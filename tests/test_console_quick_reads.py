"""The quick reads above the result: reads only; ending the window is a group of its own."""
import re

import pytest

pytestmark = pytest.mark.usefixtures("fast_password_hashing", "fresh_console_cache")


def nav_of_quick_reads(html: str) -> str:
    found = re.search(r'<nav class="quick-reads".*?</nav>', html, re.S)
    assert found, "no quick reads on the page"
    return found.group(0)


def test_end_window_is_not_among_the_quick_reads_and_keeps_its_confirmation(signed_in, shift):
    html = signed_in.get(f"/shifts/{shift.pk}/").content.decode()
    assert "end_window" not in nav_of_quick_reads(html)
    group = re.search(r'<div class="window-control".*?</div>', html, re.S)
    assert group and 'value="end_window"' in group.group(0)
    assert 'hx-confirm="End the window now?' in group.group(0)
