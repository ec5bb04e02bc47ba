"""The Chinese edition (issue 30; CONTRIBUTING.md, "Translations"): one gettext catalog per
notebook, locale/zh_CN/LC_MESSAGES/NN_topic.po, and notebooks/zh/, generated from the English
notebooks and those catalogs by `make zh` (scripts/i18n.py), so it can never drift.

No kernel time: the Chinese notebooks' code, outputs, ids, metadata and tags are checked to be
the English ones, which nbval runs. Two tests fail until every entry is translated, naming each
cell left to do: test_every_entry_is_translated and
test_each_chinese_markdown_cell_is_its_translation."""

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import polib
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import i18n  # noqa: E402

NAMES = i18n.notebook_names(ROOT)
SHOWN = 40  # problem lines shown in a failure message (the rest are counted)


def _report(problems: list[str], what: str) -> str:
    more = f"\n... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    return f"{len(problems)} {what} (python scripts/i18n.py check lists them all):\n" \
        + "\n".join(problems[:SHOWN]) + more


@pytest.fixture(scope="module")
def english():
    return {name: nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4) for name in NAMES}


@pytest.fixture(scope="module")
def chinese():
    missing = [name for name in NAMES if not (ROOT / i18n.ZH / f"{name}.ipynb").is_file()]
    assert not missing, f"notebooks/zh/ lacks {', '.join(missing)}: run make zh"
    return {name: nbformat.read(ROOT / i18n.ZH / f"{name}.ipynb", as_version=4) for name in NAMES}


@pytest.fixture(scope="module")
def checked():
    return i18n.check(ROOT)


# --- the catalogs -----------------------------------------------------------------------------


def test_each_catalog_has_an_entry_for_every_markdown_cell(english):
    problems = []
    for name, nb in english.items():
        path = i18n.catalog_path(ROOT, name)
        rel = path.relative_to(ROOT).as_posix()
        if not path.is_file():
            problems.append(f"{rel}: missing")
            continue
        entries = i18n.active(i18n.read_catalog(path))
        got = [(e.msgctxt, e.msgid) for e in entries]
        want = [(c.id, c.source) for c in i18n.translatable(nb)]
        if got != want:  # the same cells, the same English, in notebook order
            here = [f"{i18n.where(name, cid, src)}: no entry with this English" for cid, src in want
                    if (cid, src) not in got]
            here += [f"{rel}: entry {cid} is not a markdown cell of the notebook" for cid, _ in got
                     if cid not in dict(want)]
            problems += here or [f"{rel}: the entries are not in notebook order"]
        problems += [f"{rel}: entry {e.msgctxt}'s comment does not name its cell"
                     for e in entries if not e.comment.startswith(f"notebooks/{name}.ipynb, cell {e.msgctxt}")]
    assert not problems, _report(problems, "catalog problems; run make i18n")


def test_every_entry_is_translated(checked):
    """Fails until the translations land: 0 fuzzy, 0 untranslated, 0 out of step."""
    states, _ = checked
    todo = [line for s in states for line in s.todo]
    table = i18n.table(states)
    assert not todo, table + "\n" + _report(todo, "cells left in English")


def test_every_translation_keeps_the_markup(checked):
    _, problems = checked
    markup = [p for p in problems if "changes the markup" in p]
    assert not markup, _report(markup, "translations that change the markup")


def test_every_translation_writes_the_glossary_terms_as_the_notes_do(checked):
    _, problems = checked
    glossary = [p for p in problems if "the notes' form" in p]
    assert not glossary, _report(glossary, "glossary terms not in the notes' form")


def test_the_glossary_is_the_table_of_terms():
    terms = i18n.read_glossary(ROOT / i18n.GLOSSARY)
    assert terms, "locale/zh_CN/glossary.md has no rows"
    assert all(t.section for t in terms), [t.english for t in terms if not t.section]


# --- the Chinese notebooks --------------------------------------------------------------------


NOTES = ROOT.parent / "shared" / "lecture" / "lecture_02_notes.zh.md"  # beside the checkout


@pytest.mark.skipif(not NOTES.exists(), reason="lecture notes not beside this checkout")
def test_the_chinese_erratum_boxes_quote_the_notes_in_their_own_words(chinese):
    """Where a box says 讲义写道 (the notes say) it quotes the notes' Chinese: each 「…」 before its
    实际上 (in fact) is in the notes word for word (markup and line breaks aside). English
    quotes translated back would put words in the notes' mouth."""
    import re

    def plain(text: str) -> str:
        return re.sub(r"[\s*`>]", "", text)

    notes = plain(NOTES.read_text(encoding="utf-8"))
    quoted, wrong = 0, []
    for name, nb in chinese.items():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "markdown":
                continue
            for said in cell.source.split("讲义写道")[1:]:
                for quote in re.findall(r"「(.+?)」", said.split("实际上")[0], re.S):
                    quoted += 1
                    if plain(quote) not in notes:
                        wrong.append(f"{name} cell {i}: 「{quote[:60]}」")
    assert quoted >= 8, f"only {quoted} quotes of the notes found: the check looks at nothing"
    assert not wrong, "not the notes' words:\n" + "\n".join(wrong)


# One way to write each (issue 36), in the prose of every translation (code and math aside).
TYPOGRAPHY = {
    "a multiple is 64 倍, not 64×": r"\d×(?![\d\s]*\d)",
    "a bold label's full stop goes inside the bold: **先预测，再测量。**": r"(?:^|\n)(?:> )?\*\*[^*\n]+\*\*。",
    "an enumerator is （a）, full width": r"\([a-f]\)|(?:^|[\n。；：])\s*\(\d\)",
    "an erratum box is one paragraph: > **讲义写道**（§N）……。**实际上**，……":
        r"讲义写道\*\*(?!（§)|\*\*实际上\*\*(?!，)|\n> \*\*实际上",
}


def test_the_catalogs_write_numbers_labels_enumerators_and_erratum_boxes_one_way():
    import re

    wrong, boxes = [], 0
    for name in NAMES:
        for entry in i18n.active(i18n.read_catalog(i18n.catalog_path(ROOT, name))):
            text = i18n.prose(entry.msgstr)
            boxes += text.count("讲义写道")
            wrong += [f"{i18n.where(name, entry.msgctxt, entry.msgid)}: {rule}"
                      for rule, pattern in TYPOGRAPHY.items() if re.search(pattern, text)]
    assert boxes >= 10, f"only {boxes} erratum boxes found: the check looks at nothing"
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("planted", ["复制是 O(n)：64× 的元素", "**先预测，再测量**。view 是 O(1)", "答案。(a) 12",
                                     "> **讲义写道** 「原话」（§6）。\n> **实际上** 不是这样"])
def test_each_typography_rule_catches_its_fault(planted):
    import re

    assert [rule for rule, pattern in TYPOGRAPHY.items() if re.search(pattern, i18n.prose(planted))]


def test_the_chinese_notebooks_keep_every_code_cell_id_metadata_and_tag(english, chinese):
    """The same cells and code as the English; the outputs are their own (make zh runs them: what the
    code prints and draws is Chinese) and a figure's caption, its alt text, is translated."""
    problems = []
    for name in NAMES:
        en, zh = english[name], chinese[name]
        if (zh.nbformat, zh.nbformat_minor) != (en.nbformat, en.nbformat_minor):
            problems.append(f"notebooks/zh/{name}.ipynb: nbformat {zh.nbformat}.{zh.nbformat_minor}")
        expected = {**en.metadata, "jupytext": {**en.metadata.get("jupytext", {}), **i18n.NO_TWIN}}
        if zh.metadata != expected:
            problems.append(f"notebooks/zh/{name}.ipynb: the notebook's metadata differs from the English")
        if [c.id for c in zh.cells] != [c.id for c in en.cells]:
            problems.append(f"notebooks/zh/{name}.ipynb: not the English cells (ids), in order")
            continue
        for a, b in zip(en.cells, zh.cells, strict=True):
            own = {"source", "outputs", "execution_count"}
            differ = [key for key in sorted(set(a) | set(b)) if key not in own | {"metadata"} and a.get(key) != b.get(key)]
            metadata = ({**a.metadata, "caption": None}, {**b.metadata, "caption": None})
            differ += ["metadata"] if metadata[0] != metadata[1] else []
            if a.cell_type == "code" and not b.get("outputs") and a.get("outputs"):
                differ.append("outputs (none: run make zh)")
            if a.cell_type != "markdown" or not a.source.strip():
                differ += ["source"] if a.source != b.source else []
            problems += [f"{i18n.where(name, a.id, a.source)}: its {key} differs in notebooks/zh/" for key in differ]
    assert not problems, _report(problems, "differences from the English beyond the markdown")


def test_each_chinese_markdown_cell_is_its_translation(english, chinese):
    """Fails until the translations land: each markdown cell of notebooks/zh/ is its entry's msgstr."""
    problems = []
    for name in NAMES:
        entries = {e.msgctxt: e for e in i18n.active(i18n.read_catalog(i18n.catalog_path(ROOT, name)))}
        for a, b in zip(english[name].cells, chinese[name].cells, strict=True):
            if a.cell_type != "markdown" or not a.source.strip():
                continue
            entry = entries.get(a.id)
            if entry is None or not entry.translated() or entry.msgid != a.source:
                problems.append(f"{i18n.where(name, a.id, a.source)}: no translation (English in notebooks/zh/)")
            elif b.source != entry.msgstr:
                problems.append(f"{i18n.where(name, a.id, a.source)}: not its msgstr in notebooks/zh/ (run make zh)")
    assert not problems, _report(problems, "markdown cells of notebooks/zh/ that are not their translation")


def _without_outputs(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def test_notebooks_zh_is_exactly_what_the_build_writes(tmp_path):
    """Byte for byte but for the outputs, which running them writes (make zh): its own, in Chinese."""
    states, written = i18n.build(ROOT, out=tmp_path)
    assert [p.name for p in written] == [f"{name}.ipynb" for name in NAMES]
    stale = [f"notebooks/zh/{p.name}" for p in written
             if not (ROOT / i18n.ZH / p.name).is_file() or _without_outputs(ROOT / i18n.ZH / p.name) != _without_outputs(p)]
    assert not stale, f"not what `make zh` writes from the notebooks and catalogs: {', '.join(stale)}; run make zh"
    css = sorted(p.name for p in tmp_path.glob("*.css"))
    assert css == sorted(["rise.css", *(f"{name}.css" for name in NAMES)])  # RISE asks for each beside its notebook
    stale = [name for name in css if (ROOT / i18n.ZH / name).read_bytes() != (ROOT / "notebooks" / name).read_bytes()]
    assert not stale, f"notebooks/zh/ styles that are not the English ones: {', '.join(stale)}; run make zh"


def test_each_caption_in_notebooks_zh_is_its_translation(english, chinese):
    """A figure's caption is its alt text on the site and in the decks: Chinese in notebooks/zh/."""
    captions = [(a.metadata["caption"], b.metadata["caption"]) for name in NAMES
                for a, b in zip(english[name].cells, chinese[name].cells, strict=True) if a.metadata.get("caption")]
    assert len(captions) >= 20
    english_left = [en for en, zh in captions if zh == en]
    assert not english_left, f"captions left in English in notebooks/zh/: {english_left}"


# --- a changed English cell, end to end, in a copy ----------------------------------------------


def _copy(tmp_path: Path, name: str) -> Path:
    """A checkout of one notebook with a complete catalog (each msgstr = its English)."""
    root = tmp_path / "checkout"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks.txt").write_text(name + "\n")
    shutil.copy2(ROOT / "notebooks" / f"{name}.ipynb", root / "notebooks")
    i18n.extract(root)
    path = i18n.catalog_path(root, name)
    po = i18n.read_catalog(path)
    for entry in po:
        entry.msgstr = entry.msgid
    path.write_text(i18n.dumps(po), encoding="utf-8")
    return root


def _edit(root: Path, name: str, index: int, text: str) -> nbformat.NotebookNode:
    """Append ``text`` to the ``index``-th markdown cell of the copy's English notebook."""
    path = root / "notebooks" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = i18n.translatable(nb)[index]
    cell.source += text
    nbformat.write(nb, path)
    return cell


@pytest.mark.slow  # a real process or a full rebuild, seconds: make test-slow (CI)
def test_an_edited_english_cell_fails_the_check_naming_the_notebook_and_the_cell(tmp_path, capsys):
    name = NAMES[0]
    root = _copy(tmp_path, name)
    assert i18n.main(["--root", str(root), "check"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["notebook", "entries", "translated", "fuzzy", "untranslated"]
    before = i18n.translatable(nbformat.read(root / "notebooks" / f"{name}.ipynb", as_version=4))[2]
    cell = _edit(root, name, 2, "\nOne more sentence.")
    named = f"notebooks/{name}.ipynb, cell {cell.id}"

    # the command a contributor runs (make test runs the same check in-process)
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "i18n.py"), "--root", str(root), "check"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stdout + run.stderr
    assert [line for line in run.stdout.splitlines() if line.startswith("notebooks/")] == [
        f'{i18n.where(name, cell.id, cell.source)}: the English changed since the catalog was updated '
        "(run make i18n, then retranslate the entry)"]

    # make i18n: the entry keeps its translation, goes fuzzy, and keeps the English it translated
    (report,) = i18n.extract(root)
    assert (report.changed, report.new, report.obsolete) == ([cell.id], [], [])
    entry = next(e for e in i18n.read_catalog(i18n.catalog_path(root, name)) if e.msgctxt == cell.id)
    assert entry.fuzzy and entry.msgid == cell.source
    assert entry.previous_msgid == before.source and entry.msgstr == before.source
    assert i18n.main(["--root", str(root), "check"]) == 1
    out = capsys.readouterr().out
    assert f"{named} " in out and ": fuzzy: the English changed since it was translated" in out
    count = str(len(i18n.translatable(nbformat.read(root / "notebooks" / f"{name}.ipynb", as_version=4))))
    assert out.splitlines()[1].split() == [name, count, str(int(count) - 1), "1", "0"]

    # make zh leaves that cell in English; --strict refuses, naming it, and writes nothing
    assert i18n.main(["--root", str(root), "build", "--strict", "--out", str(tmp_path / "strict")]) == 1
    assert named in capsys.readouterr().err and not (tmp_path / "strict").exists()
    assert i18n.main(["--root", str(root), "build"]) == 0
    zh = nbformat.read(root / i18n.ZH / f"{name}.ipynb", as_version=4)
    assert next(c for c in zh.cells if c.id == cell.id).source == cell.source

    # retranslated, the fuzzy flag cleared (as Poedit does): the check passes again
    path = i18n.catalog_path(root, name)
    po = i18n.read_catalog(path)
    entry = next(e for e in po if e.msgctxt == cell.id)
    entry.msgstr, entry.previous_msgid = cell.source, None
    entry.flags.remove("fuzzy")
    path.write_text(i18n.dumps(po), encoding="utf-8")
    assert i18n.main(["--root", str(root), "check"]) == 0


def _toy(root: Path, cells: list[tuple[str, str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", id="code0")] + [
        nbformat.v4.new_markdown_cell(source, id=cid) for cid, source in cells]
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    (root / "notebooks.txt").write_text("01_toy\n")
    nbformat.write(nb, root / "notebooks" / "01_toy.ipynb")


def _translate(root: Path, translations: dict[str, str]) -> None:
    path = i18n.catalog_path(root, "01_toy")
    po = i18n.read_catalog(path)
    for entry in po:
        if entry.msgctxt in translations:
            entry.msgstr = translations[entry.msgctxt]
    path.write_text(i18n.dumps(po), encoding="utf-8")


def test_extract_adds_new_cells_keeps_the_old_english_and_retires_removed_cells(tmp_path):
    root = tmp_path
    first = "## §2.3 Views are cheap\n\nA view shares its storage."
    _toy(root, [("a", "# Title"), ("b", first), ("c", "Removed later."), ("d", "A cell whose id changes."),
                ("e", "   \n")])
    (report,) = i18n.extract(root)
    assert report.new == ["a", "b", "c", "d"] and report.written  # the empty cell has no entry
    path = i18n.catalog_path(root, "01_toy")
    _translate(root, {"a": "# 标题", "b": "## §2.3 view 很便宜\n\nview 共享 storage。", "c": "稍后删除。",
                      "d": "id 会变的单元格。"})
    second = first + " Copying does not."
    new = "Brand-new text about pinned memory."
    _toy(root, [("a", "# Title"), ("n", new), ("b", second), ("d2", "A cell whose id changes.")])
    (report,) = i18n.extract(root)
    assert (report.new, report.changed, report.obsolete) == (["n"], ["b", "d2"], ["c"])
    po = i18n.read_catalog(path)
    entries = {e.msgctxt: e for e in i18n.active(po)}
    assert list(entries) == ["a", "n", "b", "d2"]  # notebook order
    assert entries["a"].translated() and entries["n"].msgstr == "" and not entries["n"].fuzzy
    assert entries["b"].fuzzy and entries["b"].previous_msgid == first and entries["b"].msgstr.startswith("## §2.3")
    assert entries["d2"].fuzzy and entries["d2"].msgstr == "id 会变的单元格。"  # found by its text (difflib)
    assert [e.msgctxt for e in po.obsolete_entries()] == ["c"]  # d's translation moved to d2
    text = path.read_text(encoding="utf-8")
    assert '#| msgid ""\n#| "## §2.3 Views are cheap\\n"' in text and '#~ msgctxt "c"' in text

    # a second run changes nothing, and keeps the previous msgid (Babel's reader would lose it)
    stamp = path.stat().st_mtime_ns
    (report,) = i18n.extract(root)
    assert not report.written and path.stat().st_mtime_ns == stamp
    assert {e.msgctxt: e.previous_msgid for e in i18n.read_catalog(path) if e.fuzzy}["b"] == first

    # a cell changed twice still shows the English its translation was made from
    _toy(root, [("a", "# Title"), ("n", new), ("b", second + " Twice."), ("d2", "A cell whose id changes."),
                ("c", "Removed later.")])
    (report,) = i18n.extract(root)
    entries = {e.msgctxt: e for e in i18n.active(i18n.read_catalog(path))}
    assert entries["b"].previous_msgid == first
    assert entries["c"].translated() and entries["c"].msgstr == "稍后删除。"  # a restored cell: back as it was


# --- markup and glossary ----------------------------------------------------------------------

ENGLISH = ("## §2.3 Views\n\nA `view` is free: $n \\cdot s$ bytes, see [the docs](https://pytorch.org/x).\n\n"
           "<details>\n<summary><b>Solution</b></summary>\n\n```python\nx.view(-1)\n```\n\n</details>")


@pytest.mark.parametrize("chinese, kind", [
    (ENGLISH.replace("## §2.3 Views", "### §2.3 view"), "heading levels"),
    (ENGLISH.replace("A `view`", "view"), "code spans"),
    (ENGLISH.replace("$n \\cdot s$", "$n s$"), "math"),
    (ENGLISH.replace("https://pytorch.org/x", "https://pytorch.org/zh"), "link targets"),
    (ENGLISH.replace("<summary><b>Solution</b></summary>", "<summary>答案</summary>"), "HTML tags"),
    (ENGLISH.replace("x.view(-1)", "x.view(-1)  # 展平"), "fenced code"),
    (ENGLISH.replace("## §2.3 Views", "## 2.3 view"), "§ numbers"),
])
def test_a_translation_that_changes_the_markup_is_named(chinese, kind):
    assert [p.split(":")[0] for p in i18n.markup_problems(ENGLISH, chinese)] == [kind]


def test_a_translation_may_reorder_and_translate_around_the_markup():
    chinese = ("## §2.3 View 很便宜\n\n参见[文档](https://pytorch.org/x)：$n \\cdot s$ 字节，`view` 是免费的。\n\n"
               "<details>\n<summary><b>答案</b></summary>\n\n```python\nx.view(-1)\n```\n\n</details>")
    assert i18n.markup_problems(ENGLISH, chinese) == []


def _glossary(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "glossary.md"
    path.write_text("# Glossary\n\n| English | 中文（笔记的写法） | 笔记 |\n| --- | --- | --- |\n" + rows + "\nText.\n",
                    encoding="utf-8")
    return path


def test_a_glossary_violation_is_named_with_the_cell_and_the_term(tmp_path):
    terms = i18n.read_glossary(_glossary(tmp_path, "| stride | stride（步幅） | §2.2 |\n"
                                                     "| arithmetic intensity | 算术强度 | §3.1 |\n"))
    assert [(t.english, t.chinese, t.section, t.short) for t in terms] == [
        ("stride", "stride（步幅）", "§2.2", "stride"), ("arithmetic intensity", "算术强度", "§3.1", "算术强度")]

    def entry(cid, english, chinese, fuzzy=False):
        return cid, polib.POEntry(msgctxt=cid, msgid=english, msgstr=chinese, flags=["fuzzy"] if fuzzy else [])

    good = [entry("a", "A tensor's stride.", "tensor 的 stride（步幅）。"),
            entry("b", "Strides and\narithmetic   intensity.", "stride 与算术强度。"),  # after first use: stride
            entry("c", "Call `x.stride()`.", "调用 `x.stride()`。"),  # in code: not a use
            entry("d", "The stride.", ""),  # untranslated: the completeness check names it
            entry("e", "The stride.", "步幅", fuzzy=True)]  # fuzzy: likewise
    assert i18n.glossary_problems("01_toy", good, terms) == []
    bad = [entry("a", "A tensor's stride.", "tensor 的步幅。"), entry("b", "High ARITHMETIC INTENSITY.", "计算密度高。"),
           entry("c", "Its stride.", "它的步幅。")]
    assert i18n.glossary_problems("01_toy", bad, terms) == [
        "notebooks/01_toy.ipynb, cell a (\"A tensor's stride.\"): 'stride' is written stride（步幅） "
        "(the notes' form, glossary, §2.2; its first use in the notebook)",
        "notebooks/01_toy.ipynb, cell b (\"High ARITHMETIC INTENSITY.\"): 'arithmetic intensity' is written "
        "算术强度 (the notes' form, glossary, §3.1)",
        "notebooks/01_toy.ipynb, cell c (\"Its stride.\"): 'stride' is written stride (the notes' form, glossary, §2.2)"]


@pytest.mark.parametrize("rows, error", [
    ("| stride | stride（步幅） | §2.2 |\n| Stride | 步幅 | §2.2 |\n", "'Stride' is already on line 5"),
    ("| stride | | §2.2 |\n", "line 5: a row is"),
])
def test_a_glossary_that_breaks_the_table_is_one_line(tmp_path, rows, error):
    with pytest.raises(i18n.I18nError, match=error):
        i18n.read_glossary(_glossary(tmp_path, rows))
    (tmp_path / "none.md").write_text("| English | Chinese |\n", encoding="utf-8")
    with pytest.raises(i18n.I18nError, match="no table headed"):
        i18n.read_glossary(tmp_path / "none.md")
    broken = "| stride | stride（步幅） | §2.2 |\n\n| 不用 | 改用 | 英文含有 |\n| --- | --- | --- |\n| 问全场 | |\n"
    with pytest.raises(i18n.I18nError, match="line 10: a row is | the form not to write"):
        i18n.read_glossary(_glossary(tmp_path, broken))


def _entry(cid: str, english: str, chinese: str) -> tuple[str, polib.POEntry]:
    return cid, polib.POEntry(msgctxt=cid, msgid=english, msgstr=chinese)


BANNED = ("| tensor | 张量（tensor） | §2 |\n| tensor core | tensor core | §3.2 |\n"
          "| kernel (GPU) | kernel | §3.1 |\n| kernel (operating system, Jupyter) | 内核 | — |\n\n"
          "| 不用 | 改用 | 英文含有 |\n| --- | --- | --- |\n"
          "| tensor | 张量 | |\n| 全场 | 提问 | |\n| 作业 | 任务 | job |\n")


def test_a_form_the_glossary_rules_out_is_named_anywhere_or_where_the_english_has_its_word(tmp_path):
    terms = i18n.read_glossary(_glossary(tmp_path, BANNED))
    assert [(b.chinese, b.instead, b.english) for b in terms.banned] == [
        ("tensor", "张量", ""), ("全场", "提问", ""), ("作业", "任务", "job")]
    good = [_entry("a", "A tensor, and tensor cores.", "一个张量（tensor），以及 tensor core。"),  # inside the forms
            _entry("b", "Assignment 1 counts it.", "作业 1 里算。"),  # 作业 is wrong only for a job
            _entry("c", "The notes say \"tensors\".", "讲义写道「tensor」，即张量。"),  # a quote keeps its words
            _entry("d", "A GPU kernel, then the Jupyter kernel.", "一个 kernel，然后是 Jupyter 的内核。"),
            _entry("e", "The OS kernel maps it.", "操作系统内核映射它。"),  # either sense's form
            _entry("f", "IntTensor or LongTensor.", "IntTensor 或 LongTensor。")]  # not the word tensor
    assert i18n.glossary_problems("01_toy", good, terms) == []
    bad = [_entry("a", "A tensor.", "一个 tensor。"), _entry("b", "Ask the room: a job.", "问全场：一个作业。"),
           _entry("c", "The kernel.", "核函数。")]
    assert i18n.glossary_problems("01_toy", bad, terms) == [
        "notebooks/01_toy.ipynb, cell a (\"A tensor.\"): 'tensor' is written 张量（tensor） (the notes' form, glossary, "
        "§2; its first use in the notebook)",
        "notebooks/01_toy.ipynb, cell a (\"A tensor.\"): writes tensor, which the glossary rules out (line 12): "
        "write 张量",
        "notebooks/01_toy.ipynb, cell b (\"Ask the room: a job.\"): writes 全场, which the glossary rules out "
        "(line 13): write 提问",
        "notebooks/01_toy.ipynb, cell b (\"Ask the room: a job.\"): writes 作业, which the glossary rules out where "
        "the English says 'job' (line 14): write 任务",
        "notebooks/01_toy.ipynb, cell c (\"The kernel.\"): 'kernel' is written kernel or 内核 (the notes' form, "
        "glossary, §3.1)"]


@pytest.mark.parametrize("english, chinese, wrong", [
    ("**For the presenter**\n\n- Ask the room: a job moves to bf16.", "**讲者备注**\n\n- 问全场：一个作业换成 bf16。",
     ["全场", "作业"]),
    ("The notes' calculation, then at MFU 1.", "下面先是讲义的算法，再算 MFU 1 的情形。", ["算法"]),
    ("A tensor is a pointer plus metadata.", "tensor 是指针加元数据。", ["tensor"]),
    ("The caching allocator's cache.", "allocator（内存分配器）和它的分配器缓存。", ["分配器"]),
    ("Momentum at the same lr.", "momentum 在同样的 lr 下。", ["momentum"]),
    ("From the same seed and generator.", "从同一个 seed 和 generator。", ["seed", "generator"]),
], ids=["ask the room, job", "calculation", "tensor", "allocator", "momentum", "seed, generator"])
def test_the_glossary_refuses_a_planted_wrong_term(tmp_path, capsys, english, chinese, wrong):
    """The project's own glossary (locale/zh_CN/glossary.md) refuses the faults issue 36 found."""
    _toy(tmp_path, [("a", english)])
    i18n.extract(tmp_path)
    shutil.copy2(ROOT / i18n.GLOSSARY, tmp_path / i18n.GLOSSARY)
    _translate(tmp_path, {"a": chinese})
    assert i18n.main(["--root", str(tmp_path), "check"]) == 1
    out = capsys.readouterr().out
    assert sorted(line.split(": writes ")[1].split(",")[0] for line in out.splitlines() if ": writes " in line) \
        == sorted(wrong)


# --- kept apart from the English everywhere else ----------------------------------------------


# (make i18n, zh and regen build and run the Chinese notebooks, make test runs them, no English target sees
# them: test_faults_tools.py, TestMakeNamesTheNotebooksExactly)


def test_saving_a_chinese_notebook_in_lab_writes_no_py_twin(tmp_path):
    """jupytext.toml pairs notebooks///ipynb with py_src///py:percent, so notebooks/zh/X.ipynb would
    get a py_src/zh/X.py on every save in Lab; the build's jupytext metadata turns that off."""
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
    from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

    shutil.copy2(ROOT / "jupytext.toml", tmp_path)
    (tmp_path / "notebooks" / "zh").mkdir(parents=True)
    (tmp_path / "py_src").mkdir()
    shutil.copy2(ROOT / i18n.ZH / f"{NAMES[0]}.ipynb", tmp_path / "notebooks" / "zh")
    manager = build_async_jupytext_contents_manager_class(AsyncLargeFileManager)(root_dir=str(tmp_path))

    async def save():
        model = await manager.get(f"notebooks/zh/{NAMES[0]}.ipynb")
        await manager.save(model, f"notebooks/zh/{NAMES[0]}.ipynb")

    asyncio.run(save())
    assert sorted(os.listdir(tmp_path / "py_src")) == []


# --- issue 38, item 4: a catalog that msgfmt --check refuses is refused, before anything is written

MSGFMT = shutil.which("msgfmt")  # GNU gettext, the oracle where it is installed (a fresh machine may lack it)
DUPLICATE = '\nmsgctxt "b"\nmsgid "Second cell."\nmsgstr "又一个。"\n'


@pytest.mark.parametrize(("old", "new", "bad", "why"), [
    ('"世界"', '"世界', '"世界', "end-of-line within string"),  # F01: polib dropped the line's last character
    ('"世界"', '"世\\q界"', '"世\\q界"', "syntax error"),  # an escape msgfmt does not know (polib keeps it)
    ('"世界"', '"世界" 好', '"世界" 好', "syntax error"),
    ('"世界"', '世界"', '世界"', "end-of-line within string"),
    ('msgstr "第二个单元格。"', 'msgstr "第二个单元格。"\n\n#~ msgctxt "old"\n#~ msgid "gone', '#~ msgid "gone',
     "end-of-line within string"),  # an obsolete entry
    ('msgctxt "b"', '#, fuzzy\n#| msgid "Second\nmsgctxt "b"', '#| msgid "Second', "end-of-line within string"),
    ('msgstr "第二个单元格。"', 'msgstr "第二个单元格。"\n\nmsgctxt "b"\nmsgid "Second cell."\nmsgstr "又一个。"',
     'msgctxt "b"', "duplicate message definition"),  # polib keeps both; the notebook would get either
])
def test_a_catalog_msgfmt_refuses_is_refused_before_anything_is_written(tmp_path, capsys, old, new, bad, why):
    _toy(tmp_path, [("a", "Hello\nworld"), ("b", "Second cell.")])
    i18n.extract(tmp_path)
    _translate(tmp_path, {"a": "你好\n世界", "b": "第二个单元格。"})
    path = i18n.catalog_path(tmp_path, "01_toy")
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    planted = text.replace(old, new)
    path.write_text(planted, encoding="utf-8")
    line = [n for n, text_line in enumerate(planted.splitlines(), 1) if text_line == bad][-1]
    for command in ("build", "check", "extract"):
        assert i18n.main(["--root", str(tmp_path), command]) == 2
        assert capsys.readouterr().err == (f"i18n: {path}: cannot read the catalog: line {line}: {why} (as msgfmt "
                                           "--check says); nothing was written\n")
    assert not (tmp_path / i18n.ZH).exists() and path.read_text(encoding="utf-8") == planted
    if MSGFMT:  # the oracle: msgfmt refuses it too, at that line (a duplicate: at its msgid, the next one)
        proc = subprocess.run([MSGFMT, "--check", "-o", os.devnull, str(path)], capture_output=True, text=True)
        assert proc.returncode != 0 and any(f"{path}:{n}:" in proc.stderr for n in (line, line + 1)), proc.stderr


def test_what_msgfmt_accepts_is_read(tmp_path):
    """msgfmt's escapes, quotes inside comments, obsolete and previous entries: read, as msgfmt reads them."""
    _toy(tmp_path, [("a", "Hello"), ("b", "Second cell.")])
    i18n.extract(tmp_path)
    path = i18n.catalog_path(tmp_path, "01_toy")
    text = path.read_text(encoding="utf-8").replace('msgctxt "a"\nmsgid "Hello"\nmsgstr ""', '#. a "quoted" word\n'
                                                    'msgctxt "a"\nmsgid "Hello"\nmsgstr "\\t\\x41\\101 \\"你好\\"\\\\"')
    text = text.replace('msgctxt "b"', '#, fuzzy\n#| msgid "Old"\nmsgctxt "b"')
    path.write_text(text + '\n#~| msgid "Older"\n#~ msgctxt "z"\n#~ msgid "Gone"\n#~ msgstr "走了"\n', encoding="utf-8")
    entries = {e.msgctxt: e for e in i18n.read_catalog(path)}
    assert entries["a"].msgstr.startswith("\t") and entries["a"].msgstr.endswith('"你好"\\') and entries["b"].fuzzy
    if MSGFMT:
        assert subprocess.run([MSGFMT, "--check", "-o", os.devnull, str(path)], capture_output=True).returncode == 0


@pytest.mark.skipif(MSGFMT is None, reason="GNU msgfmt (gettext) is not installed: the strict reader is checked above")
def test_every_catalog_passes_msgfmt_check():
    for name in NAMES:
        path = i18n.catalog_path(ROOT, name)
        proc = subprocess.run([MSGFMT, "--check", "-o", os.devnull, str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
