"""make mutation (scripts/mutation.py) stays runnable: what it mutates, and the plants it needs.

The run itself takes an hour or more, by hand; these checks fail at once when a refactor moves a
line a hand plant replaces, or drops a module from the mutated set.
"""

import importlib.util
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("mutation", ROOT / "scripts" / "mutation.py")
mutation = importlib.util.module_from_spec(spec)
sys.modules["mutation"] = mutation
spec.loader.exec_module(mutation)


def test_mutmut_mutates_the_lessons_calculators_and_measurers():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    modules = {Path(p).stem for p in config["only_mutate"]}
    assert modules == {"flops", "sizes", "dtypes", "training_memory", "optim", "bench", "data", "checks", "exercises"}
    assert "not site and not slow" in config["pytest_add_cli_args_test_selection"]


def test_in_data_only_the_lessons_sampler_is_mutated():
    source = (ROOT / "lecture_utils" / "data.py").read_text(encoding="utf-8")
    spared_head, rest = source.split("# pragma: no mutate end\n")
    mutated, spared_tail = rest.split("# pragma: no mutate block\n")
    assert "# pragma: no mutate start" in spared_head
    assert mutated.lstrip().startswith("# >>> lesson code from py_src/06_data_loading.py")
    assert "def get_batch(" in mutated and "def load_tokens(" in spared_tail


def test_every_hand_plant_finds_its_line():
    for what, path, old, new, notebooks in mutation.PLANTS:
        text = (ROOT / path).read_text(encoding="utf-8")
        assert old in text and old != new, what
        assert all((ROOT / "notebooks" / f"{name}.ipynb").is_file() for name in notebooks), what
