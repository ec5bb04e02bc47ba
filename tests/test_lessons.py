"""Lesson code has one source: each `# @save` notebook cell and its copy in lecture_utils agree."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import export_lessons  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_every_lesson_cell_matches_its_package_copy():
    problems = export_lessons.stale(ROOT)
    assert not problems, "\n\n".join(problems) + "\nrun `make export`"


def test_the_lessons_the_issue_lists_are_exported():
    exported = {module: "\n".join(regions.values())
                for module, regions in export_lessons.exports(ROOT).items()}
    everything = "\n".join(exported.values())
    for name in ("class SGD", "class Momentum", "class AdaGrad", "class RMSProp", "class Adam",
                 "class AdamW", "def get_batch(", "def cross_entropy(", "def cosine_lr(",
                 "def clip_grad_norm(", "def save_checkpoint(", "def load_checkpoint(",
                 "def matmul_flops(", "def training_flops(", "def init_weight("):
        assert name in everything, f"{name} is not defined in any `# @save` lesson cell"


def _toy_repo(tmp_path: Path) -> Path:
    (tmp_path / "py_src").mkdir()
    (tmp_path / "lecture_utils").mkdir()
    (tmp_path / "py_src" / "01_toy.py").write_text(
        "# %% [markdown]\n# # Toy\n\n# %%\n# @save lecture_utils/toy.py\n"
        "def double(x):\n    return 2 * x\n\n# %%\nprint(double(2))\n\n"
        "# %%\n# @save lecture_utils/toy.py\ndef triple(x):\n    return 3 * x\n")
    (tmp_path / "lecture_utils" / "toy.py").write_text('"""Toy."""\n\nHAND_WRITTEN = 1\n')
    (tmp_path / "notebooks.txt").write_text("01_toy\n")  # the notebooks, named exactly
    return tmp_path


def test_export_writes_a_region_and_check_then_passes(tmp_path):
    root = _toy_repo(tmp_path)
    assert export_lessons.stale(root)  # no region yet: stale
    assert export_lessons.export(root) == ["lecture_utils/toy.py"]
    text = (root / "lecture_utils" / "toy.py").read_text()
    assert "HAND_WRITTEN = 1" in text  # the hand-written part is kept
    assert "def double(x):\n    return 2 * x\n\n\ndef triple(x):" in text
    assert "# @save" not in text
    assert export_lessons.stale(root) == []
    assert export_lessons.export(root) == []  # idempotent


def test_a_one_character_edit_on_either_side_is_caught(tmp_path):
    root = _toy_repo(tmp_path)
    export_lessons.export(root)
    notebook = root / "py_src" / "01_toy.py"
    module = root / "lecture_utils" / "toy.py"
    original_nb, original_module = notebook.read_text(), module.read_text()

    notebook.write_text(original_nb.replace("2 * x", "2 * y"))  # a student edits the cell
    problems = export_lessons.stale(root)
    assert len(problems) == 1 and "-    return 2 * x" in problems[0] and "+    return 2 * y" in problems[0]

    notebook.write_text(original_nb)
    module.write_text(original_module.replace("3 * x", "4 * x"))  # someone edits the copy
    assert export_lessons.stale(root)
    assert export_lessons.main(["--check", "--root", str(root)]) == 1


def test_a_region_whose_cell_was_removed_is_reported(tmp_path):
    root = _toy_repo(tmp_path)
    export_lessons.export(root)
    notebook = root / "py_src" / "01_toy.py"
    notebook.write_text(notebook.read_text().replace("# @save lecture_utils/toy.py\n", ""))
    assert any("exports nothing to it" in p for p in export_lessons.stale(root))
