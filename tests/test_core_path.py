"""Each notebook is a core path, then depth (issue 22): the layout rules and the limits.

The core is every cell without the tag ``deeper``. Depth sits in "Going deeper: ..." sections:
a markdown heading cell tagged ``deeper`` and stored collapsed in JupyterLab
(``jp-MarkdownHeadingCollapsed``), every cell under it tagged ``deeper`` up to the next
heading of the same or a higher level (so Lab's collapse hides exactly the section), and no
``deeper`` cell outside such a section. Speaker notes are hidden in Lab (their source
collapsed) and state no answers. The limits are scripts/reading_time.py's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import reading_time  # noqa: E402

NOTEBOOKS = [ROOT / "notebooks" / f"{name}.ipynb" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]
HEADING = re.compile(r"^(#{1,6}) (.*)$", re.M)
DEEPER_HEADING = re.compile(r"^#{2,6} Going deeper: \S")


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def heading_level(cell) -> int | None:
    if cell.cell_type != "markdown":
        return None
    m = HEADING.search(cell.source)
    return len(m.group(1)) if m else None


def layout_problems(cells) -> list[str]:
    """What breaks the core/deeper layout; [] if nothing."""
    problems, section_level = [], None  # the level of the open "Going deeper" heading
    for i, cell in enumerate(cells):
        level = heading_level(cell)
        first_line = cell.source.strip().splitlines()[0][:50] if cell.source.strip() else ""
        if level is not None and section_level is not None and level <= section_level:
            section_level = None  # a heading of the same or a higher level ends the section
        if cell.cell_type == "markdown" and DEEPER_HEADING.match(cell.source.lstrip()):
            if "deeper" not in tags(cell):
                problems.append(f"cell {i} {first_line!r}: a Going deeper heading without the tag 'deeper'")
            if cell.metadata.get("jp-MarkdownHeadingCollapsed") is not True:
                problems.append(f"cell {i} {first_line!r}: not stored collapsed (jp-MarkdownHeadingCollapsed)")
            section_level = level
            continue
        if section_level is not None and "deeper" not in tags(cell):
            problems.append(f"cell {i} {first_line!r}: inside a Going deeper section but not tagged 'deeper'")
        if section_level is None and "deeper" in tags(cell):
            problems.append(f"cell {i} {first_line!r}: tagged 'deeper' outside a Going deeper section")
        if cell.metadata.get("slideshow", {}).get("slide_type") == "notes":
            if cell.metadata.get("jupyter", {}).get("source_hidden") is not True:
                problems.append(f"cell {i}: speaker notes shown in Lab (set jupyter.source_hidden)")
        if any(t.startswith("claim-S") for t in tags(cell)) and "deeper" in tags(cell):
            problems.append(f"cell {i} {first_line!r}: a claim tag on a deeper cell (claims are checked in the core)")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_core_and_deeper_layout(path):
    assert layout_problems(nbformat.read(path, as_version=4).cells) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_core_path_keeps_its_limits(path):
    shape = reading_time.shape(path)
    assert shape.core_minutes <= reading_time.MAX_MINUTES, f"core {shape.core_minutes:.1f} min"
    assert shape.ticks <= reading_time.MAX_TICKS, f"{shape.ticks} ✓ lines in the core"


def test_the_course_keeps_its_limits_and_tags_every_claim():
    shapes = [reading_time.shape(p) for p in NOTEBOOKS]
    assert reading_time.problems(shapes) == []


def test_the_reading_time_script_counts_as_the_issue_defines():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    out = nbformat.v4.new_output("stream", name="stdout", text="✓ a: 1\n✓ b: 2\n")
    assert reading_time.minutes(md("word " * 400)) == 2.0
    assert reading_time.minutes(code("x = 1\n\n# a comment\ny = 2\n")) == 0.2
    assert reading_time.ticks(code("check()", outputs=[out])) == 2


def test_a_broken_layout_is_caught():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    deeper = {"tags": ["deeper"], "jp-MarkdownHeadingCollapsed": True}
    good = [md("## §2 Topic"), code("x = 1"), md("### Going deeper: more", metadata=deeper),
            code("y = 2", metadata={"tags": ["deeper"]}), md("## §3 Next"), code("z = 3")]
    assert layout_problems(good) == []
    untagged = [*good[:3], code("y = 2"), *good[4:]]
    assert "not tagged 'deeper'" in layout_problems(untagged)[0]
    stray = [*good, code("w = 4", metadata={"tags": ["deeper"]})]
    assert "outside a Going deeper section" in layout_problems(stray)[0]
    open_ = [*good[:2], md("### Going deeper: more", metadata={"tags": ["deeper"]}), *good[3:]]
    assert "not stored collapsed" in layout_problems(open_)[0]
    notes = [*good, md("- say this", metadata={"slideshow": {"slide_type": "notes"}})]
    assert "speaker notes shown in Lab" in layout_problems(notes)[0]


def test_the_readme_states_each_core_path_in_minutes_as_measured():
    rows = re.findall(r"^\| \[\d\d [^\]]+\]\(notebooks/(\d\d_\w+\.ipynb)\) \| [^|]+ \| (\d+) \| \d+ \|$",
                      (ROOT / "README.md").read_text(), re.M)
    stated = {name: int(minutes) for name, minutes in rows}
    measured = {p.name: round(reading_time.shape(p).core_minutes) for p in NOTEBOOKS}
    assert stated == measured, "update the README table from `python scripts/reading_time.py`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_cell_is_allowed_to_raise(path):
    """A deliberate error is a check(..., raises=), so any raising cell fails nbval, make run and
    the GPU check alike."""
    tagged = [i for i, c in enumerate(nbformat.read(path, as_version=4).cells) if "raises-exception" in tags(c)]
    assert tagged == []


def test_each_notebook_states_its_core_path_in_minutes_as_measured():
    """The first cell says "about N minutes": N is the core's reading time, rounded."""
    for path in NOTEBOOKS:
        intro = nbformat.read(path, as_version=4).cells[0].source
        stated = re.search(r"about (\d+) minutes", intro)
        assert stated, f"{path.name}: its first cell does not say how long the core takes"
        assert int(stated[1]) == round(reading_time.shape(path).core_minutes), path.name


def test_the_chinese_readme_states_the_same_minutes_and_slides():
    """README.zh-CN.md's table (its notebooks in notebooks/zh/) agrees with README.md's."""
    row = r"^\| \[\d\d [^\]]+\]\(notebooks/{}(\d\d_\w+)\.ipynb\) \| [^|]+ \| (\d+) \| (\d+) \|$"
    english = re.findall(row.format(""), (ROOT / "README.md").read_text(), re.M)
    chinese = re.findall(row.format("zh/"), (ROOT / "README.zh-CN.md").read_text(encoding="utf-8"), re.M)
    assert len(english) == 8 and chinese == english
