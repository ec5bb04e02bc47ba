"""Exercises as students need them (issue 14), in every notebook.

Under "## Exercises" each question is a ``### Qn.`` (from the notes' self-test) or ``### En.m.``
(the notebook's own) heading, followed by a fill-in cell (tag ``exercise``), a check cell (tag
``exercise-check``, code hidden, output shown) that calls ``check_answer``, and the solution
(tag ``solution``): a markdown cell, one collapsed ``<details>`` block holding a ```` ```python ````
block that ends with the same ``check_answer`` lines (issue 28). A markdown cell is never run by
Run All, and every viewer (Lab, nbviewer, GitHub, VS Code, the site) keeps a ``<details>`` shut
until it is opened. The stored outputs say "not answered yet" under every check;
tests/test_twins.py runs each solution and sees its answers accepted ("is right"). Each rule is
also shown to fail on a notebook broken on purpose.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from pathlib import Path

import jupytext
import nbformat
import pytest
from twin_runner import solution_code

from lecture_utils.exercises import ANSWERS, check_answer

ROOT = Path(__file__).resolve().parents[1]
TWINS = [ROOT / "py_src" / f"{name}.py" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]
EXERCISES = re.compile(r"^## Exercises\b", re.M)
HEADING = re.compile(r"^(#{2,3}) (.*)", re.M)
QUESTION_ID = re.compile(r"(Q\d+[a-z]?|E\d+\.\d+)\.?\s")  # "Q5. Why ...", "E1.1 Strides ..."
CHECK_CALL = re.compile(r"^check_answer\(.*?\)$", re.M | re.S)
# The one form a check takes: the exercise's name and the student's variable, no expected value.
CHECK_FORM = re.compile(r'^check_answer\("([^"]+)", ([A-Za-z_][A-Za-z0-9_]*)\)$')


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def hidden(cell, what: str) -> bool:
    return cell.metadata.get("jupyter", {}).get(what) is True


def exercise_cells(cells: list) -> list:
    """The cells from the one whose markdown holds "## Exercises" to the end."""
    starts = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and EXERCISES.search(c.source)]
    return cells[starts[0]:] if starts else []


def check_calls(source: str) -> list[str]:
    """Each top-level ``check_answer(...)`` statement, whitespace-normalised."""
    calls, current = [], None
    for line in source.splitlines():
        if current is None and line.startswith("check_answer("):
            current = line
        elif current is not None:
            current += " " + line.strip()
        if current is not None and current.count("(") == current.count(")"):
            calls.append(re.sub(r"\s+", " ", current))
            current = None
    return calls


def question_ids(cells: list) -> list[str]:
    ids = []
    for cell in exercise_cells(cells):
        if cell.cell_type == "markdown":
            ids += [m.group(1) for level, text in HEADING.findall(cell.source)
                    if level == "###" and (m := QUESTION_ID.match(text + " "))]
    return ids


def way_back(notebook: str) -> str:
    """For a student who answered an exercise and ran `make test` (as the README offers): how to
    keep the answers and bring the lecture's notebook back."""
    nb = notebook or "NN_topic"
    return (f"if these are your answers, keep them in a copy (Lab: File > Save Notebook As..., any name: make test "
            f"checks only the notebooks notebooks.txt names), then bring back the lecture's with `git checkout -- "
            f"notebooks/{nb}.ipynb py_src/{nb}.py`; an author's fill-in cell keeps its '...'")


def structure_problems(cells: list, known=ANSWERS, notebook: str = "") -> list[str]:
    """What is wrong with a notebook's exercises (cells from jupytext or nbformat); [] if nothing.
    ``known``: the exercise names that have an answer in lecture_utils.exercises; ``notebook``: its
    name (NN_topic), for the way back a student who answered is told."""
    section = exercise_cells(cells)
    if not section:
        return ["no '## Exercises' section"]
    problems = []
    question, answered = None, True
    for i, cell in enumerate(section):
        if cell.cell_type == "markdown":
            for level, text in HEADING.findall(cell.source):
                if level != "###":
                    continue
                if question is not None and not answered:
                    problems.append(f"{question}: no fill-in cell (tag 'exercise') under it")
                question, answered = text[:40], False
                if not QUESTION_ID.match(text + " "):
                    problems.append(f"heading '### {text[:40]}' has no id: name it '### Qn. ...' "
                                    "or '### En.m. ...'")
        if "exercise" in tags(cell):
            answered = True
            where = f"exercise cell {cell.source.splitlines()[0][:40]!r}"
            if "..." not in cell.source:
                problems.append(f"{where}: answered (no '...' left for a student to replace): {way_back(notebook)}")
            check = section[i + 1] if i + 1 < len(section) else None
            solution = section[i + 2] if i + 2 < len(section) else None
            if check is None or "exercise-check" not in tags(check):
                problems.append(f"{where}: not followed by a check cell (tag 'exercise-check')")
                continue
            calls = check_calls(check.source)
            if not calls:
                problems.append(f"{where}: its check cell calls no check_answer")
            for call in calls:
                form = CHECK_FORM.match(call)
                if not form:
                    problems.append(f"{where}: {call} shows more than a name and a variable (the answer?)")
                elif form.group(1) not in known:
                    problems.append(f"{where}: {form.group(1)!r} has no answer in lecture_utils/exercises.py")
            if not hidden(check, "source_hidden") or hidden(check, "outputs_hidden"):
                problems.append(f"{where}: its check cell must hide its code and show its output")
            if solution is None or "solution" not in tags(solution):
                problems.append(f"{where}: the check cell is not followed by a solution cell")
                continue
            code = solution_code(solution.source) if solution.cell_type == "markdown" else None
            if code is None or not solution.source.rstrip().endswith("</details>"):
                problems.append(f"{where}: its solution must be a markdown cell holding one collapsed <details> "
                                "with a ```python block (Run All would run a code cell, and viewers would show it)")
                continue
            solution_calls = check_calls(code)
            missing = [c for c in calls if c not in solution_calls]
            if missing:
                problems.append(f"{where}: the solution does not end with the check lines {missing}")
            elif solution_calls[-len(calls):] != calls:
                problems.append(f"{where}: the solution's last check_answer lines differ from the check cell's")
    if question is not None and not answered:
        problems.append(f"{question}: no fill-in cell (tag 'exercise') under it")
    n_ex, n_check, n_sol = (sum(t in tags(c) for c in section) for t in ("exercise", "exercise-check", "solution"))
    if not n_ex == n_check == n_sol:
        problems.append(f"{n_ex} exercise, {n_check} check and {n_sol} solution cells: they come in threes")
    return problems


def output_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def output_problems(cells: list, notebook: str = "") -> list[str]:
    """The stored outputs: a check cell says "not answered yet" once per check, a solution is right."""
    problems = []
    for cell in exercise_cells(cells):
        first = cell.source.splitlines()[0][:40] if cell.source else ""
        text = output_text(cell)
        if "exercise-check" in tags(cell) and any(o.get("output_type") == "execute_result" for o in cell.outputs):
            problems.append(f"check cell {first!r}: shows an Out: value (check_answer prints one line, returns None)")
        if "exercise-check" in tags(cell):
            n_calls = len(check_calls(cell.source))
            if text.count("not answered yet") != n_calls or "is right" in text or "✗" in text:
                answered = "is right" in text or "✗" in text
                problems.append(f"check cell {first!r}: stored output is not {n_calls} "
                                f"'not answered yet' line(s): {text[:120]!r}"
                                + (f"; {way_back(notebook)}" if answered else ""))
    return problems


def duplicate_ids(ids_by_notebook: dict[str, list[str]]) -> list[str]:
    counts = Counter(i for ids in ids_by_notebook.values() for i in ids)
    return sorted(i for i, n in counts.items() if n > 1)


def twin_cells(py: Path) -> list:
    return jupytext.read(py).cells


def stored_cells(py: Path) -> list:
    return nbformat.read(ROOT / "notebooks" / py.with_suffix(".ipynb").name, as_version=4).cells


@pytest.mark.parametrize("py", TWINS, ids=lambda p: p.stem)
def test_exercise_structure(py):
    assert structure_problems(twin_cells(py), notebook=py.stem) == []


@pytest.mark.parametrize("py", TWINS, ids=lambda p: p.stem)
def test_stored_outputs(py):
    cells = stored_cells(py)
    assert structure_problems(cells, notebook=py.stem) == []  # the .ipynb holds the same cells as its twin
    assert output_problems(cells, notebook=py.stem) == []


def test_no_question_in_two_notebooks():
    ids = {py.stem: question_ids(twin_cells(py)) for py in TWINS}
    assert len(TWINS) == 8 and all(ids.values()), ids
    assert duplicate_ids(ids) == []


# --- every rule fails on a notebook broken on purpose ---------------------------------------

CHECK = 'check_answer("Q9, bytes", q9_bytes)'
KNOWN = {"Q9, bytes", "x"}


def good_cells() -> list:
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    stream = nbformat.v4.new_output
    cells = [
        md("## What to remember\n\n- a tensor is storage plus metadata"),
        md("## Exercises\n\nFill in, run the check, then expand the solution.\n\n### Q9. How many bytes?"),
        code("q9_bytes = ...  # bytes of a 3 x 4 int64 tensor", metadata={"tags": ["exercise"]}),
        code(CHECK, metadata={"tags": ["exercise-check"], "jupyter": {"source_hidden": True}},
             outputs=[stream("stream", name="stdout", text="Q9, bytes: not answered yet (...)\n")]),
        md(f"<details>\n<summary><b>Solution</b></summary>\n\nAnswer. 12 x 8.\n\n```python\nq9_bytes = 12 * 8\n"
           f"{CHECK}\n```\n\n</details>", metadata={"tags": ["solution"]}),
    ]
    return cells


def _set(index, key, value):
    def mutate(cells):
        cells[index].metadata.setdefault("jupyter", {})[key] = value
    return mutate


def _edit_source(index, old, new):
    def mutate(cells):
        cells[index].source = cells[index].source.replace(old, new)
    return mutate


def _drop(index):
    def mutate(cells):
        del cells[index]
    return mutate


def _swap(cells):
    cells[3], cells[4] = cells[4], cells[3]


def _as_code(index):
    def mutate(cells):
        cells[index] = nbformat.v4.new_code_cell(solution_code(cells[index].source), metadata=cells[index].metadata)
    return mutate


def _output(index, text):
    def mutate(cells):
        cells[index].outputs[0]["text"] = text
    return mutate


BROKEN = {
    "heading without id": (_edit_source(1, "### Q9.", "### Q."), "has no id"),
    "question without fill-in cell": (_edit_source(1, "How many bytes?", "How many bytes?\n\n### Q8. And bits?"),
                                      "Q9. How many bytes?: no fill-in cell"),
    "fill-in without ...": (_edit_source(2, "...", "None"), "no '...'"),
    "no check cell": (_drop(3), "not followed by a check cell"),
    "check cell without check_answer": (_edit_source(3, "check_answer", "print"), "calls no check_answer"),
    "check cell code shown": (_set(3, "source_hidden", False), "must hide its code"),
    "check cell output hidden": (_set(3, "outputs_hidden", True), "show its output"),
    "solution before check": (_swap, "not followed by a check cell"),
    "no solution": (_drop(4), "not followed by a solution cell"),
    "solution as a code cell": (_as_code(4), "must be a markdown cell holding one collapsed <details>"),
    "solution not collapsed": (_edit_source(4, "<details>", "<div>"), "must be a markdown cell holding"),
    "solution without the check line": (_edit_source(4, CHECK, "print(q9_bytes)"), "does not end with"),
    "solution checks something else last": (_edit_source(4, CHECK, f'{CHECK}\ncheck_answer("x", q9_bytes)'),
                                            "last check_answer lines differ"),
    "check shows the answer": (_edit_source(3, "q9_bytes)", "q9_bytes, 96)"), "more than a name and a variable"),
    "check of an exercise with no answer": (_edit_source(3, '"Q9, bytes"', '"Q8, bits"'), "has no answer"),
}


def test_good_exercise_passes():
    assert structure_problems(good_cells(), KNOWN) == []
    assert output_problems(good_cells()) == []
    assert question_ids(good_cells()) == ["Q9"]


@pytest.mark.parametrize("name", BROKEN)
def test_broken_exercise_is_caught(name):
    mutate, expected = BROKEN[name]
    cells = copy.deepcopy(good_cells())
    mutate(cells)
    problems = structure_problems(cells, KNOWN)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(("index", "text"), [
    (3, "✓ Q9, bytes: 96 is right\n"),                  # the check cell's stored output gives it away
    (3, ""),                                             # or says nothing
])
def test_wrong_stored_output_is_caught(index, text):
    cells = copy.deepcopy(good_cells())
    _output(index, text)(cells)
    assert output_problems(cells) != []


def test_a_student_who_answered_and_ran_make_test_is_told_how_to_keep_the_answer_and_get_back(tmp_path):
    """Issue 29, item 24: the message names the way back (a copy, then git checkout), not only the rule."""
    cells = copy.deepcopy(good_cells())
    _edit_source(2, "...", "96")(cells)  # the student's answer
    _output(3, "✓ Q9, bytes: 96 is right\n")(cells)  # run and saved
    [problem] = structure_problems(cells, KNOWN, notebook="01_tensors_and_strides")
    assert problem.startswith("exercise cell 'q9_bytes = 96  # bytes of a 3 x 4 int64 ': answered (")
    assert "Save Notebook As" in problem and (
        "`git checkout -- notebooks/01_tensors_and_strides.ipynb py_src/01_tensors_and_strides.py`") in problem
    [stored] = output_problems(cells, notebook="01_tensors_and_strides")
    assert "git checkout -- notebooks/01_tensors_and_strides.ipynb" in stored
    # the way back works: a copy under another name is not one of the notebooks make test checks
    names = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
    assert "01_tensors_and_strides" in names and "01_tensors_and_strides-Copy1" not in names


def test_no_exercises_section_is_caught():
    assert structure_problems(good_cells()[:1], KNOWN) == ["no '## Exercises' section"]


def test_a_check_cell_that_shows_out_is_caught():
    cells = copy.deepcopy(good_cells())
    cells[3].outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": "False"},
                                                   execution_count=1))
    assert any("shows an Out:" in p for p in output_problems(cells))


def test_every_answer_belongs_to_an_exercise_of_a_notebook():
    used = {CHECK_FORM.match(c).group(1) for py in TWINS for cell in twin_cells(py)
            if "exercise-check" in tags(cell) for c in check_calls(cell.source) if CHECK_FORM.match(c)}
    assert sorted(set(ANSWERS) - used) == []


def test_duplicate_ids_are_caught():
    assert duplicate_ids({"02": ["Q2", "Q3"], "08": ["Q2", "E8.1"]}) == ["Q2"]
    assert duplicate_ids({"02": ["Q2"], "08": ["E8.1"]}) == []


# --- issue 29, item 25: an answer beyond any float is "not right yet", never an OverflowError


def _an_answer(kind) -> str:
    """An exercise whose expected value is of this kind (the first, in the notebooks' order)."""
    return next(name for name, spec in ANSWERS.items() if kind(spec.expected))


@pytest.mark.parametrize("kind", ["int", "float with a tolerance", "inf", "str", "tuple"])
@pytest.mark.parametrize("answer", [10**400, -10**5000], ids=["1e400", "-1e5000"])
def test_check_answer_with_an_int_beyond_any_float_never_raises(capsys, kind, answer):
    name = _an_answer({"int": lambda e: isinstance(e, int) and not isinstance(e, bool),
                       "float with a tolerance": lambda e: isinstance(e, float) and e != float("inf"),
                       "inf": lambda e: e == float("inf"), "str": lambda e: isinstance(e, str),
                       "tuple": lambda e: isinstance(e, tuple)}[kind])
    check_answer(name, answer)
    line = capsys.readouterr().out
    sign = "-" if answer < 0 else ""
    assert line.startswith(f"✗ {name}: about {sign}10**") and line.count("\n") == 1
    assert line.endswith(" is not right yet (the hidden solution below explains it)\n")  # no factor names it
