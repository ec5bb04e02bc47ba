"""The package's shape (issue 23): one home per name, no import circle, one module for durable files;
the tools' size (issue 37: each script under 400 lines, the Trainer small enough to read).

These read the source with ``ast``, so each rule names the file and line that breaks it; each rule
is also shown to catch a planted break.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lecture_utils"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "_data" not in p.parts)
# Every tool that writes files: the package, the scripts, the benchmarks, the notebooks' sources.
WRITERS = MODULES + sorted((ROOT / "scripts").glob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py")) \
    + sorted((ROOT / "py_src").glob("*.py"))
DURABLE = re.compile(r"\bos\.replace\(|\bfsync\(|\bflock\(")
FILES_MODULE = PACKAGE / "files.py"
# A command-line module's entry points: every CLI has its own, by convention.
ENTRY_POINTS = {"main", "build_parser", "_Parser", "_HOMES", "__all__", "__getattr__", "__dir__"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The lecture_utils modules ``path`` imports, at the top, inside a function, or under
    ``if __name__ == "__main__":``: run as ``python -m``, such a block's import of a module that
    imports this one back runs this module a second time (issue 29, item 27: data.py's
    ``python -m lecture_utils.data prepare`` imported prepare.py, which imports data.py)."""
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("lecture_utils")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lecture_utils"):
            known = {module_name(p) for p in MODULES}
            # `from lecture_utils.train import loop` imports the submodule; `import X from pkg` the package
            found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                      for a in node.names}
    return found


def import_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    # A package's own __init__ is where a lazy import map points from: not an edge of a circle.
    return {m: {t for t in targets if t != m and t in modules and t != m.rsplit(".", 1)[0]}
            for m, targets in modules.items()}


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle in ``graph``, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_package_has_no_import_circle():
    graph = import_graph({module_name(p): imports(p) for p in MODULES})
    assert circle(graph) is None
    # planted: the flops <-> widgets circle this issue found
    planted = {**graph, "lecture_utils.flops": graph["lecture_utils.flops"] | {"lecture_utils.widgets"}}
    assert circle(planted) == ["lecture_utils.flops", "lecture_utils.widgets", "lecture_utils.flops"]


def test_the_reading_side_of_the_data_never_imports_the_writing_side(tmp_path):
    """The trainer reads tokens through data.py; prepare.py writes them and imports data.py, never
    the reverse, not even for ``python -m lecture_utils.data prepare`` (issue 29, item 27)."""
    graph = import_graph({module_name(p): imports(p) for p in MODULES})
    assert "lecture_utils.data" in graph["lecture_utils.prepare"]
    assert "lecture_utils.prepare" not in graph["lecture_utils.data"]
    # planted: the __main__ block that made the circle is seen as an import
    old = tmp_path / "data.py"
    old.write_text('import sys\n\nif __name__ == "__main__":\n    from lecture_utils.prepare import main\n\n'
                   '    sys.exit(main())\n')
    assert imports(old) == {"lecture_utils.prepare"}
    planted = {**graph, "lecture_utils.data": graph["lecture_utils.data"] | imports(old)}
    assert circle(planted) == ["lecture_utils.data", "lecture_utils.prepare", "lecture_utils.data"]


def top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names - ENTRY_POINTS


def doubles(defined: dict[str, set[str]]) -> dict[str, list[str]]:
    homes: dict[str, list[str]] = {}
    for module, names in defined.items():
        for name in names:
            homes.setdefault(name, []).append(module)
    return {name: sorted(where) for name, where in homes.items() if len(where) > 1}


def test_a_name_has_one_home_and_one_meaning():
    defined = {module_name(p): top_level_names(p) for p in MODULES}
    assert doubles(defined) == {}
    planted = {**defined, "lecture_utils.hardware": defined["lecture_utils.hardware"] | {"DTYPES"}}
    assert doubles(planted) == {"DTYPES": ["lecture_utils.dtypes", "lecture_utils.hardware"]}


def reexports(path: Path) -> list[str]:
    """Names a module imports only to hand on (``# noqa: F401``, or an alias ``X = module.Y``)."""
    text = path.read_text(encoding="utf-8")
    found = [f"{path.name}:{i}" for i, line in enumerate(text.splitlines(), 1) if "noqa: F401" in line]
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id[:1].islower() \
                and all(isinstance(t, ast.Name) and t.id[:1].islower() for t in node.targets):
            found.append(f"{path.name}:{node.lineno} {node.targets[0].id} = {node.value.id}")
    return found


def test_no_module_re_exports_another_modules_names():
    assert [r for p in MODULES for r in reexports(p)] == []


def test_no_module_re_exports_catches_an_alias_and_a_kept_import(tmp_path):
    shim = tmp_path / "shim.py"
    shim.write_text("from lecture_utils.device import seed_all\nseed_everything = seed_all\n"
                    "from lecture_utils.widgets import training_time_calculator  # noqa: F401\n")
    assert reexports(shim) == ["shim.py:3", "shim.py:2 seed_everything = seed_all"]


def durable_writes(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if DURABLE.search(line.split("#", 1)[0]):
                found.append(f"{path.relative_to(ROOT)}:{i}")
    return found


def test_os_replace_fsync_and_flock_live_in_one_module():
    assert {f.split(":")[0] for f in durable_writes(WRITERS)} == {"lecture_utils/files.py"}


@pytest.mark.parametrize("line", ["    os.replace(tmp, path)", "    os.fsync(f.fileno())",
                                  "    fcntl.flock(fd, fcntl.LOCK_EX)"])
def test_a_durable_write_outside_files_py_is_caught(tmp_path, line):
    rogue = ROOT / "scripts" / "_rogue_writer_for_a_test.py"
    try:
        rogue.write_text(f"def save(tmp, path, f, fd):\n{line}\n")
        assert durable_writes([rogue]) == ["scripts/_rogue_writer_for_a_test.py:2"]
    finally:
        rogue.unlink()


def mapped_modules(text: str) -> list[str]:
    """The modules CONTRIBUTING.md's module map names (``train/run`` -> ``lecture_utils/train/run.py``)."""
    table = text[text.index("<!-- module-map"):].split("\n\n", 1)[0]
    names = []
    for row in table.splitlines()[3:]:
        names += re.findall(r"`([\w/]+)`", row.split(" | ")[0])
    return names


def test_the_module_map_in_contributing_names_every_module_once():
    names = mapped_modules((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    on_disk = sorted(p.relative_to(PACKAGE).with_suffix("").as_posix() for p in MODULES
                     if p.name != "__init__.py" or p.parent == PACKAGE)
    assert sorted(n.replace("/__init__", "") for n in names) == on_disk
    assert len(names) == len(set(names))
    # planted: a module the map forgot
    assert sorted(mapped_modules("<!-- module-map -->\n| m | w |\n| --- | --- |\n| `device` | x |\n")) != on_disk


MAX_SCRIPT_LINES = 400  # a tool that grows past this splits along its seams (scripts/i18n.py: _catalog, _markup)


def too_long(paths: list[Path]) -> dict[str, int]:
    lengths = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in paths}
    return {name: n for name, n in lengths.items() if n >= MAX_SCRIPT_LINES}


def test_every_tool_script_is_under_400_lines(tmp_path):
    scripts = sorted((ROOT / "scripts").glob("*.py"))
    assert len(scripts) >= 15 and too_long(scripts) == {}
    planted = tmp_path / "grown.py"
    planted.write_text("x = 1\n" * MAX_SCRIPT_LINES)
    assert too_long([planted]) == {"grown.py": 400}


def test_the_trainer_stays_small_enough_to_read():
    """resolve -> build -> loop: the class holds the run's state and its loop, nothing else
    (issue 23: no method over 40 lines, the class at most 150)."""
    source = (PACKAGE / "train" / "trainer.py").read_text(encoding="utf-8")
    [cls] = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "Trainer"]
    methods = {f.name: f.end_lineno - f.lineno + 1 for f in cls.body if isinstance(f, ast.FunctionDef)}
    assert cls.end_lineno - cls.lineno + 1 <= 150 and max(methods.values()) <= 40, methods


# The unit tests no heavier than the code they guard (issue 37, item 7). Unit-test lines: every
# tests/*.py that `make unit` runs (not a module marked site or slow as a whole), each helper module
# one of those imports (tests/twin_runner.py), and both conftest.py; guarded: what they test.
OUT_OF_UNIT = {"site", "slow"}


def module_marks(path: Path) -> set[str]:
    """The markers a module's own ``pytestmark = ...`` names (``pytest.mark.site``: ``site``)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            return {n.attr for n in ast.walk(node.value)
                    if isinstance(n, ast.Attribute) and getattr(n.value, "attr", None) == "mark"}
    return set()


def unit_test_files(tests: Path) -> list[Path]:
    helpers = {p.stem: p for p in tests.glob("*.py") if not p.name.startswith("test_") and p.name != "conftest.py"}
    files = [p for p in sorted(tests.glob("test_*.py")) + [tests / "conftest.py"] if not module_marks(p) & OUT_OF_UNIT]
    for path in files:  # grows as helpers join: a helper's own imports count too
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) else []
            files += [helpers[n] for n in names if n in helpers and helpers[n] not in files]
    return files + [tests.parent / "conftest.py"]


def line_count(paths) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)


def test_the_unit_tests_are_no_heavier_than_the_code_they_guard(tmp_path):
    guarded = line_count([*PACKAGE.rglob("*.py"), *ROOT.glob("scripts/*.py"), *ROOT.glob("benchmarks/*.py"),
                          *ROOT.glob("jupyter/labextension/src/*.js")])
    unit = line_count(unit_test_files(ROOT / "tests"))
    # planted: site and slow modules and the helper only they import are left out; a unit module's helpers,
    # and theirs, are in
    for name, text in {"conftest.py": "", "test_unit.py": "from runner import go\n", "runner.py": "import pages\n",
                       "pages.py": "", "browser.py": "", "test_slow.py": "pytestmark = pytest.mark.slow\n",
                       "test_browser.py": "import browser, pages\npytestmark = [pytest.mark.site, MARKS]\n"}.items():
        (tmp_path / name).write_text(text)
    assert sorted(p.name for p in unit_test_files(tmp_path)) == ["conftest.py", "conftest.py", "pages.py",
                                                                 "runner.py", "test_unit.py"]
    print(f"unit-test lines {unit}, guarded lines {guarded}")
    assert unit <= guarded, f"unit-test lines {unit} > guarded lines {guarded}: lighten tests/ (CONTRIBUTING.md)"
