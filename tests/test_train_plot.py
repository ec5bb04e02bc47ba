"""`python -m lecture_utils.train plot OUT`: a real tiny run's log drawn into OUT/curves.png, and
every bad OUT answered with one line and exit 2, leaving an existing curves.png alone. The run is
made by the real training command line, so `make test-slow` (and CI) runs these; plot's help and
its place as a subcommand are checked in tests/test_train.py."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from lecture_utils import train  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "LECTURE_DEVICE": "cpu", "MPLBACKEND": "Agg"}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "lecture_utils.train", *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished 3-step tiny run, made by the real training command line."""
    out = tmp_path_factory.mktemp("plot") / "run"
    proc = _cli("--config", "tiny", "--steps", "3", "--batch-size", "4", "--seq-len", "32", "--warmup", "1",
                "--peak-flops", "1e12",
                "--val-every", "2", "--no-progress", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture
def copy(run, tmp_path):
    """A copy of the run that a test may damage."""
    return Path(shutil.copytree(run, tmp_path / "run"))


def test_plot_writes_a_png_of_the_expected_size_and_says_where(copy):
    proc = _cli("plot", str(copy))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == f"wrote {copy / 'curves.png'}\n"
    image = mpimg.imread(copy / "curves.png")  # decodes as a PNG
    assert image.shape == (500, 1500, 4)  # 15 x 5 inches at 100 dpi, RGBA
    assert image[..., :3].std() > 0.05  # something is drawn, not a blank canvas
    assert [p.name for p in copy.iterdir() if ".tmp-" in p.name] == []  # no temporary file left behind


def _plot_in_process(capsys, *args):
    plt.close("all")
    with pytest.raises(SystemExit) as exit_:
        train.main(["plot", *args])
    captured = capsys.readouterr()
    return exit_.value.code, captured.out, captured.err.splitlines()


def _rewrite_log(out: Path, text: str) -> None:
    (out / "log.jsonl").write_text(text)


def _first_lines(out: Path, n: int) -> str:
    return "".join(line + "\n" for line in (out / "log.jsonl").read_text().splitlines()[:n])


# (how to damage the run, what the one error line must say after the path)
EDGES = {
    "out is missing": (lambda out: shutil.rmtree(out), "{out} is not a folder"),
    "out is a file": (lambda out: (shutil.rmtree(out), out.write_text("x")), "{out} is not a folder"),
    "no log.jsonl": (lambda out: (out / "log.jsonl").unlink(), "{out}/log.jsonl does not exist"),
    "empty log": (lambda out: _rewrite_log(out, ""), "{out}/log.jsonl is empty"),
    "torn last line": (lambda out: _rewrite_log(out, _first_lines(out, 2) + '{"step": 3, "lo'),
                       "{out}/log.jsonl line 3 is torn"),
    "bad earlier line": (lambda out: _rewrite_log(out, "not json\n" + _first_lines(out, 2)),
                         "{out}/log.jsonl line 1 is not a valid log record"),
    "record without lr": (lambda out: _rewrite_log(out, json.dumps({"step": 1, "loss": 9.0, "tokens_per_s": 1.0})
                                                   + "\n"),
                          "{out}/log.jsonl line 1 has no number for lr"),
}


@pytest.mark.parametrize("edge", EDGES)
def test_each_bad_run_folder_is_one_line_and_exit_2(copy, capsys, edge):
    damage, expected = EDGES[edge]
    damage(copy)
    code, out, err = _plot_in_process(capsys, str(copy))
    assert code == 2 and out == "" and len(err) == 1, err
    assert err[0].startswith("python -m lecture_utils.train plot: error: " + expected.format(out=copy)), err
    assert not (copy / "curves.png").exists()


def test_a_failing_plot_leaves_an_existing_png_untouched(copy, capsys):
    assert train.main(["plot", str(copy)]) == 0
    before = (copy / "curves.png").read_bytes()
    _rewrite_log(copy, _first_lines(copy, 1) + "{torn")
    code, _, err = _plot_in_process(capsys, str(copy))
    assert code == 2 and len(err) == 1
    assert (copy / "curves.png").read_bytes() == before
