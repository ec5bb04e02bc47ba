import subprocess
import sys

import pytest

from lecture_utils.cli import main


def run(*args):
    """The real command, as a user types it."""
    return subprocess.run([sys.executable, "-m", "lecture_utils", *args], capture_output=True, text=True)


@pytest.mark.slow  # a real process or a full rebuild, seconds: make test-slow (CI)
def test_estimate_example_from_the_issue():
    result = run("estimate", "--params", "70e9", "--tokens", "15e12", "--gpu", "H100", "--gpus", "1024",
                 "--mfu", "0.5")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "= 6.3e+24" in out
    assert "H100 SXM bf16 dense 989.5 TFLOP/s" in out and "1979" in out and "sparsity" in out
    assert "143.9 days" in out


def test_estimate_in_process(capsys):
    assert main(["estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "1024", "--mfu", "0.4"]) == 0
    assert "179.9 days" in capsys.readouterr().out


def test_memory_command(capsys):
    assert main(["memory", "--params", "70e9", "--recipe", "fp32-adamw", "--gpus", "8", "--sharded"]) == 0
    out = capsys.readouterr().out
    assert "140 GB (130 GiB) per GPU" in out  # 70e9 * 16 / 8
    assert "does NOT fit in one H100 SXM" in out and "largest that fits: 4e+10" in out
    assert main(["memory", "--params", "5e9", "--gpus", "8"]) == 0
    assert "fits in one H100 SXM" in capsys.readouterr().out


def test_gpus_lists_the_table(capsys):
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    for name in ("A100 SXM 80GB", "H100 SXM", "H100 PCIe", "H200", "B200", "MI300X", "RTX 4090", "L4"):
        assert name in out


def test_help_is_there(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "--mfu" in out and "DENSE" in out


@pytest.mark.parametrize(("args", "reason"), [
    (["estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "8", "--gpu", "H1000"], "unknown accelerator 'H1000'"),
    (["estimate", "--params", "seventy", "--tokens", "15e12", "--gpus", "8"], "not a number"),
    (["estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "8", "--mfu", "1.5"], "[1e-06, 1]"),
    (["estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "8", "--mfu", "1e-320"], "--mfu: not a fraction"),
    (["estimate", "--params", "1e308", "--tokens", "15e12", "--gpus", "8"], "--params: not a positive number up to 1e+30"),
    (["estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "8", "--mfu", "0"], "--mfu: not a positive"),
    (["estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "0"], "--gpus: not a positive"),
    (["estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "2.5"], "--gpus: not a positive whole number"),
    (["estimate", "--params=-70e9", "--tokens", "15e12", "--gpus", "8"], "--params: not a positive number"),
    (["estimate", "--params", "70e9", "--tokens", "inf", "--gpus", "8"], "--tokens: not a positive number"),
    (["estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "8", "--dtype", "int8"], "invalid choice"),
    (["estimate", "--params", "70e9", "--tokens", "15e12"], "--gpus"),
    (["memory", "--params", "7e9", "--recipe", "lion"], "unknown recipe 'lion'"),
    (["memory", "--params", "-1"], "--params: not a positive number"),
    (["memory", "--params", "7.5"], "--params: not a positive whole number"),
    (["memory", "--params", "1e308"], "--params: not a positive number up to 1e+30"),
    (["memory", "--params", "1e400"], "--params: not a positive number"),
    (["memory", "--params", "7e9", "--gpus", "0"], "--gpus: not a positive"),
    (["memory", "--params", "7e9", "--gpu", "TPU"], "unknown accelerator 'TPU'"),
    (["teleport"], "invalid choice"),
    ([], "required"),
])
def test_bad_arguments_exit_2_with_one_line(args, reason, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and reason in lines[0], err


@pytest.mark.slow  # a real process or a full rebuild, seconds: make test-slow (CI)
def test_bad_arguments_through_the_real_command():
    result = run("estimate", "--params", "70e9", "--tokens", "15e12", "--gpus", "8", "--gpu", "TPU")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "unknown accelerator 'TPU'" in result.stderr
