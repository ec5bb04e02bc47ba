"""The README's map covers every section of the lecture notes and points at real headings."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT.parent / "shared" / "lecture" / "lecture_02_notes.zh.md"  # beside the checkout

# The notes' sections with their own text (top-level §1, §3, §4, §5, §7 only have
# subsections) and the self-test questions.
SECTIONS = ["§1.1", "§1.2", "§2", "§2.1", "§2.2", "§2.3", "§2.4", "§3.1", "§3.2", "§3.3",
            "§3.4", "§4.1", "§4.2", "§4.3", "§5.1", "§5.2", "§6", "§6.1", "§7.1", "§7.2",
            "§8", "§8.1", "§8.2", "§8.3"] + [f"Self-test Q{i}" for i in range(1, 6)]


def _map_rows() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and (cells[0].startswith("§") or cells[0].startswith("Self-test")):
            rows[cells[0]] = (cells[2], cells[3])
    return rows


def test_every_section_of_the_notes_is_mapped():
    assert list(_map_rows()) == SECTIONS


@pytest.mark.skipif(not NOTES.exists(), reason="lecture notes not beside this checkout")
def test_section_list_matches_the_notes():
    text = NOTES.read_text(encoding="utf-8")
    numbered = re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", text, re.M)
    subsections = {n for n in numbered if "." in n}
    assert {s.removeprefix("§") for s in SECTIONS if "." in s} == subsections
    questions = re.findall(r"\[!question\]- (Q\d)", text)
    assert [f"Self-test {q}" for q in questions] == [s for s in SECTIONS if "Q" in s]


def test_every_linked_heading_exists_in_its_notebook():
    linked = 0
    for section, (notebook, heading) in _map_rows().items():
        target = re.search(r"\((notebooks/[^)]+\.ipynb)\)", notebook)
        assert target is not None, f"{section}: no notebook linked"
        ipynb = ROOT / target.group(1)
        assert ipynb.exists(), f"{section}: {ipynb.name} does not exist"
        source = (ROOT / "py_src" / ipynb.with_suffix(".py").name).read_text(encoding="utf-8")
        assert re.search(rf"^# #+ {re.escape(heading)}$", source, re.M), f"{section}: no heading {heading!r}"
        if section.startswith("§"):
            assert heading.startswith(section + " "), f"{section}: heading lacks its section number"
        linked += 1
    assert linked == len(SECTIONS)


def test_every_heading_the_chinese_map_links_is_a_heading_of_its_chinese_notebook():
    """README.zh-CN.md's map, row for row the English one's, names each Chinese notebook's own
    heading (the Chinese site links its cells to them: a wrong one fails that build)."""
    import nbformat

    text = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    section = text.split("## 对照表：讲义到 notebook", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split(" | ")]
            for line in section.splitlines() if line.startswith("|")][2:]
    assert [row[0].replace("复习自测", "Self-test") for row in rows] == SECTIONS
    for row in rows:
        target = re.search(r"\((notebooks/zh/[^)]+\.ipynb)\)", row[2])
        assert target is not None, f"{row[0]}: no Chinese notebook linked"
        nb = nbformat.read(ROOT / target.group(1), as_version=4)
        headings = {m for cell in nb.cells if cell.cell_type == "markdown"
                    for m in re.findall(r"^#+ (.+?)\s*$", cell.source, re.M)}
        assert row[3] in headings, f"{row[0]}: no heading {row[3]!r} in {target.group(1)}"


def test_readme_leads_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert text.index("make lab") < text.index("make run")
    assert text.index("make test") < text.index("make run")
    assert "make test" in (ROOT / ".ci" / "run").read_text()
