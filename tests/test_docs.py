"""The documentation holds together: every relative link in README.md and docs/*.md (markdown
links and images) names a file of the repository, and README.md keeps its sections and the two
set-up commands near the top."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# [text](target) and ![alt](target); the target ends at whitespace or the closing bracket
# (an optional "title" after it is ignored). Fenced code blocks are left out first.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)

README_SECTIONS = [
    "What it is",
    "Layout",
    "Layers",
    "The console",
    "Study management",
    "The trial explorer",
    "Running on real services",
    "Deploying: production is the default",
    "The environment",
    "The CLI",
    "Calibrations",
    "The Python API",
    "Reinforcement learning",
    "Running an agent over MCP",
]


def relative_links(text: str) -> list[str]:
    """The link targets of a markdown text that name a file: no scheme, not an anchor alone."""
    targets = []
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0].split("?", 1)[0])
    return targets


def broken_links(page: Path, text: str) -> list[str]:
    return [t for t in relative_links(text) if not (page.parent / t).resolve().is_file()]


def test_there_are_pages_and_links_to_check():
    assert (ROOT / "README.md").is_file() and len(PAGES) > 1
    assert len(relative_links((ROOT / "README.md").read_text())) >= 5


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file(page):
    assert broken_links(page, page.read_text()) == []


def test_a_broken_link_is_caught():
    page = ROOT / "docs" / "performance.md"
    text = "![a](screenshots/console-end.png) [b](../README.md#the-console) [c](https://example.org/x)"
    assert broken_links(page, text) == []
    assert broken_links(page, text + " [d](no-such-page.md) ![e](screenshots/gone.png)") == [
        "no-such-page.md", "screenshots/gone.png"]
    assert relative_links("```\n[f](inside-a-fence.md)\n```\n[g](#anchor)") == []


def test_readme_keeps_its_sections_and_the_setup_commands():
    text = (ROOT / "README.md").read_text()
    headings = [m.group(1).strip() for m in re.finditer(r"^#{1,6} +(.+)$", FENCE.sub("", text), re.MULTILINE)]
    assert [h for h in README_SECTIONS if h not in headings] == []
    assert [h for h in headings if h in README_SECTIONS] == README_SECTIONS  # in this order
    top = "\n".join(text.splitlines()[:40])
    assert "make run" in top and "make test" in top
