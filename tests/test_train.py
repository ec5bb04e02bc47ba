"""The trainer's pieces against torch's, and the end-to-end guarantees of its CLI."""

import dataclasses
import inspect
import json
import math
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lecture_utils import train
from lecture_utils.nn import cross_entropy
from lecture_utils.optim import AdamW

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--batch-size", "4", "--seq-len", "32", "--warmup", "2", "--val-every", "0", "--no-progress"]


# --- cross_entropy

@pytest.mark.parametrize("scale", [1.0, 30.0, 1e4])
def test_cross_entropy_matches_torch_even_for_huge_logits(scale):
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 50) * scale
    targets = torch.randint(0, 50, (3, 5))
    ours = cross_entropy(logits, targets)
    theirs = F.cross_entropy(logits.view(-1, 50), targets.view(-1))
    assert torch.isfinite(ours)
    torch.testing.assert_close(ours, theirs)


def test_cross_entropy_gradient_matches_torch():
    logits = torch.randn(4, 10, requires_grad=True)
    targets = torch.randint(0, 10, (4,))
    cross_entropy(logits, targets).backward()
    ours = logits.grad.clone()
    logits.grad = None
    F.cross_entropy(logits, targets).backward()
    torch.testing.assert_close(ours, logits.grad)


@pytest.mark.parametrize(("logits", "targets"), [
    (torch.randn(2, 5), torch.zeros(3, dtype=torch.long)),  # shapes disagree
    (torch.randn(2, 5), torch.zeros(2)),  # float class ids
    ([1.0], torch.zeros(1, dtype=torch.long)),  # not a tensor
])
def test_cross_entropy_lesson_code_fails_loudly_not_silently_on_bad_input(logits, targets):
    # lesson code has no validation of its own: torch itself refuses, no silent wrong number
    with pytest.raises((RuntimeError, AttributeError)):
        cross_entropy(logits, targets)


# --- clip_grad_norm

@pytest.mark.parametrize(("scale", "max_norm"), [(3, 0.01), (3, 1.0), (3, 1e6),
                                               (1e-7, 1e-8), (3e-7, 1e-7), (1e-6, 1e-7), (1e-8, 1.0)])
def test_clip_grad_norm_matches_torch(scale, max_norm):
    """Tiny norms too, near or below 1e-6, where the 1e-6 in max_norm / (norm + 1e-6) decides the result:
    at norm 1e-6 and max_norm 1e-7 torch scales by 1e-7 / 2e-6 = 0.05, not 0.1."""
    torch.manual_seed(0)
    a = [torch.nn.Parameter(torch.randn(5, 3)) for _ in range(3)] + [torch.nn.Parameter(torch.randn(2))]
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    for pa, pb in zip(a[:3], b[:3], strict=True):  # the last parameter has no gradient: skipped
        pa.grad = torch.randn_like(pa) * scale
        pb.grad = pa.grad.clone()
    ours = train.clip_grad_norm(a, max_norm)
    theirs = torch.nn.utils.clip_grad_norm_(b, max_norm)
    torch.testing.assert_close(ours, theirs)
    for pa, pb in zip(a[:3], b[:3], strict=True):
        torch.testing.assert_close(pa.grad, pb.grad, rtol=1e-5, atol=0)
    assert a[3].grad is None


def test_clip_grad_norm_edge_cases():
    assert train.clip_grad_norm([torch.nn.Parameter(torch.ones(2))], 1.0).item() == 0.0
    p = torch.nn.Parameter(torch.ones(4))
    p.grad = torch.full((4,), 2.0)
    assert train.clip_grad_norm(p, 1.0).item() == pytest.approx(4.0)  # a single tensor works too
    assert torch.linalg.vector_norm(p.grad).item() == pytest.approx(1.0, rel=1e-5)
    for bad in (0, -1.0):  # would zero or flip every gradient: the lesson's one-line assert
        with pytest.raises(AssertionError):
            train.clip_grad_norm([p], bad)


# --- cosine_lr

def test_cosine_lr_matches_torch_lambda_lr_schedule():
    """Against torch: LambdaLR with nanoGPT's get_lr written independently."""
    max_lr, min_lr, warmup, total = 2.0, 0.2, 7, 50

    def nanogpt(it):  # nanoGPT's train.py get_lr, with `it < warmup` giving 0 at it == 0
        if it < warmup:
            return max_lr * it / warmup
        if it > total:
            return min_lr
        ratio = (it - warmup) / (total - warmup)
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, nanogpt)
    for step in range(60):
        assert train.cosine_lr(step, max_lr, min_lr, warmup, total) == pytest.approx(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    assert train.cosine_lr(0, 1.0, 0.0, 0, 10) == 1.0  # no warm-up: the peak at once


# The schedule's arguments are checked at the edge, TrainConfig (and so the CLI); a warm-up longer
# than the run, which only a resumed run may keep (its own), when the run is resolved.
@pytest.mark.parametrize("kw", [{"warmup": -1}, {"lr": -1.0}, {"lr": 0.0},
                                {"min_lr": 2.0, "lr": 1.0}, {"min_lr": -0.1}, {"steps": 1.5}, {"steps": True},
                                {"clip": 0}, {"clip": -1.0}, {"clip": "1"}, {"weight_decay": -0.1},
                                {"lr": float("nan")}, {"steps": 0}, {"batch_size": 6, "accum": 4},
                                {"precision": "fp8"}, {"config": "huge"}, {"optimizer": "lion"}])
def test_train_config_rejects_bad_values(kw):
    with pytest.raises((ValueError, TypeError)):
        train.TrainConfig(**kw)


# --- checkpoints

def _tiny_model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = AdamW(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    return model, opt


def test_checkpoint_round_trip_restores_everything(tmp_path):
    model, opt = _tiny_model_and_optimizer()
    g = torch.Generator().manual_seed(3)
    torch.randn(2, generator=g)
    train.save_checkpoint(tmp_path / "c.pt", model, opt, 7, generator=g, config={"d": 4})
    expected = (torch.rand(3), np.random.rand(), __import__("random").random(), torch.rand(2, generator=g))
    model2, opt2 = torch.nn.Linear(4, 3), None
    opt2 = AdamW(model2.parameters(), lr=0.1)
    g2 = torch.Generator()
    torch.manual_seed(99)
    np.random.seed(99)
    assert train.load_checkpoint(tmp_path / "c.pt", model2, opt2, generator=g2) == 7
    got = (torch.rand(3), np.random.rand(), __import__("random").random(), torch.rand(2, generator=g2))
    assert torch.equal(got[0], expected[0]) and got[1:3] == expected[1:3] and torch.equal(got[3], expected[3])
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        assert torch.equal(a, b)
    assert opt2.state_dict()["state"][0]["step"] == 1
    saved = train.read_checkpoint(tmp_path / "c.pt")
    assert saved["extra"] == {"config": {"d": 4}} and sorted(saved["rng"]) == ["cuda", "generator", "numpy",
                                                                              "python", "torch"]
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]  # no temporary file left


class _Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_malicious_pickle_is_refused_not_executed(tmp_path, monkeypatch):
    path = tmp_path / "evil.pt"
    torch.save({"model": _Payload(), "optimizer": {}, "step": 0, "rng": {}}, path)  # pickles os.system
    calls = []
    monkeypatch.setattr(os, "system", lambda cmd: calls.append(cmd))  # would record a call
    with pytest.raises(ValueError, match="arbitrary pickled objects"):
        train.read_checkpoint(path)
    assert calls == []  # the payload never ran


def test_plain_pickle_and_corrupt_files_are_clear_errors(tmp_path):
    (tmp_path / "p.pt").write_bytes(pickle.dumps({"step": 1}, protocol=2))
    with pytest.raises(ValueError):
        train.read_checkpoint(tmp_path / "p.pt")
    model, opt = _tiny_model_and_optimizer()
    train.save_checkpoint(tmp_path / "c.pt", model, opt, 1)
    data = (tmp_path / "c.pt").read_bytes()
    (tmp_path / "c.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        train.read_checkpoint(tmp_path / "c.pt")
    with pytest.raises(FileNotFoundError):
        train.read_checkpoint(tmp_path / "missing.pt")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="missing"):
        train.read_checkpoint(tmp_path / "other.pt")


def test_save_is_atomic(tmp_path, monkeypatch):
    model, opt = _tiny_model_and_optimizer()
    path = tmp_path / "c.pt"
    train.save_checkpoint(path, model, opt, 1)
    before = path.read_bytes()

    def crash(obj, f, *a, **k):
        f.write(b"half a checkpoint")
        raise KeyboardInterrupt("killed mid-save")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        train.save_checkpoint(path, model, opt, 2)
    assert path.read_bytes() == before  # the old checkpoint is intact
    monkeypatch.undo()
    assert train.read_checkpoint(path)["step"] == 1


def test_save_fsyncs_the_file_with_all_its_bytes_and_then_the_folder(tmp_path, monkeypatch):
    """Durable, not only atomic: the file is fsynced with all its bytes written (its size at
    fsync time is the final size) before the rename, and the folder after it."""
    import stat

    model, opt = _tiny_model_and_optimizer()
    path = tmp_path / "run" / "c.pt"
    synced, real_fsync = [], os.fsync

    def recording_fsync(fd):
        st = os.fstat(fd)
        synced.append((st.st_ino, stat.S_ISDIR(st.st_mode), st.st_size))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    train.save_checkpoint(path, model, opt, 1)
    final, folder = os.stat(path), os.stat(path.parent)
    assert [(ino, is_dir) for ino, is_dir, _ in synced] == [(final.st_ino, False), (folder.st_ino, True)]
    assert synced[0][2] == final.st_size  # nothing was left in Python's buffer when it was synced


def test_evaluate_builds_no_graph_and_restores_training_mode():
    from lecture_utils.models import GPT, get_config

    torch.manual_seed(0)
    model = GPT(get_config("tiny", n_layers=1, d_model=16, n_heads=2, vocab_size=64, seq_len=8))
    x = torch.randint(0, 64, (2, 8))
    seen = []
    model.register_forward_hook(lambda m, i, out: seen.append((m.training, out.requires_grad)))
    loss = train.evaluate(model, [(x, x)])
    assert seen == [(False, False)] and model.training
    assert math.isclose(loss, train.loop.lm_loss(model(x), x).item(), rel_tol=1e-6)
    # zero_grad's set_to_none, which the notebook says is the default since PyTorch 2.0
    assert inspect.signature(torch.optim.Optimizer.zero_grad).parameters["set_to_none"].default is True


# --- the trainer

def test_trainer_loss_falls_and_logs_every_step(tmp_path):
    cfg = train.TrainConfig(steps=20, batch_size=8, seq_len=32, warmup=2, val_every=10, lr=1e-2)
    trainer = train.Trainer(cfg, tmp_path, progress=False, echo=lambda m: None)
    trainer.peak = 1e12  # FLOP/s: skips the CPU matmul benchmark (MFU is not what this test checks)
    records = trainer.run()
    assert [r["step"] for r in records] == list(range(1, 21))
    assert records[-1]["loss"] < records[0]["loss"] - 1.0
    assert "val_loss" in records[9] and "val_loss" in records[19] and "val_loss" not in records[10]
    lines = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert lines == records
    assert set(lines[0]) >= {"step", "loss", "lr", "grad_norm", "tokens_per_s", "mfu"}


def test_logged_tokens_per_s_and_mfu_from_a_fixed_peak_and_clock(tmp_path, monkeypatch):
    """A fixed peak (no measurement) and a clock that advances 0.25 s per reading, so every step
    takes exactly 0.25 s. As rank 0 of two processes (it trains its half of each batch) the MFU
    divides by the peak of *both* devices, so it is half the one-process MFU."""
    import dataclasses
    import types

    from lecture_utils.train import trainer as trainer_module
    from lecture_utils.train.resolve import Process

    cfg = train.TrainConfig(steps=2, batch_size=4, seq_len=32, warmup=0, val_every=0)
    tokens = np.random.default_rng(0).integers(0, 8192, 4096, dtype=np.uint16)  # no 100 MB file to verify
    trainer = train.Trainer(cfg, tmp_path, progress=False, echo=lambda m: None, train_data=tokens, val_data=tokens)
    trainer.peak = 1e9  # FLOP/s per device, instead of the benchmark
    ticks = iter(range(1000))
    monkeypatch.setattr(trainer_module, "time", types.SimpleNamespace(perf_counter=lambda: 0.25 * next(ticks)))
    records = trainer.run()
    assert [r["tokens_per_s"] for r in records] == [512.0, 512.0]  # 4 sequences x 32 tokens / 0.25 s
    flops = trainer.plan.flops_per_step  # forward + backward of the global batch of 4
    assert [r["mfu"] for r in records] == [pytest.approx(flops / 0.25 / 1e9, rel=1e-12)] * 2
    logged = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [(r["tokens_per_s"], r["mfu"]) for r in logged] == [(r["tokens_per_s"], r["mfu"]) for r in records]
    two = dataclasses.replace(trainer.plan, process=Process(trainer.plan.device, rank=0, world=2))
    record = trainer_module.step_record(1, 9.0, 0.0, 1.0, 0.25, two, cfg, 1e9)
    assert record["mfu"] == pytest.approx(flops / 0.25 / 2e9, rel=1e-12)  # half: two devices' peak


def test_the_first_line_and_the_summary_say_what_mfu_divides_by(tmp_path, monkeypatch):
    """A CPU's nominal peak, a GPU's datasheet peak, a given one: the first line names it. Where there
    is no honest peak (a GPU missing from the table, MPS, an emulated dtype) the run says so and
    logs no MFU, never a rate divided by a measured one."""
    from lecture_utils import bench

    nominal = "nominal: 2 cores x 2.6 GHz x 48 FLOP/cycle (AVX2 fp32, 2 FMA pipes, assumed)"
    monkeypatch.setattr(bench, "peak_flops", lambda *a, **k: bench.Peak(2.5e11, nominal, "nominal"))
    cfg = train.TrainConfig(steps=1, batch_size=4, seq_len=32, warmup=0, val_every=0)
    tokens = np.random.default_rng(0).integers(0, 8192, 4096, dtype=np.uint16)
    said = []
    train.Trainer(cfg, tmp_path / "m", progress=False, echo=said.append, train_data=tokens, val_data=tokens).run()
    assert said[0].endswith(f"; MFU against 0.25 TFLOP/s per device ({nominal})")
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["peak_flops_per_device"] == 2.5e11 and summary["peak_source"] == nominal
    monkeypatch.setattr(bench, "peak_flops", lambda *a, **k: bench.Peak(989.5e12, "H100 SXM dense bf16 (datasheet)",
                                                                        "datasheet"))
    said.clear()
    train.Trainer(cfg, tmp_path / "s", progress=False, echo=said.append, train_data=tokens, val_data=tokens).run()
    assert said[0].endswith("; MFU against 989.5 TFLOP/s per device (H100 SXM dense bf16 (datasheet))")
    monkeypatch.setattr(bench, "peak_flops", lambda *a, **k: bench.Peak(None, "no datasheet peak for NVIDIA X", None))
    said.clear()
    records = train.Trainer(cfg, tmp_path / "u", progress=False, echo=said.append, train_data=tokens,
                            val_data=tokens).run()
    assert said[0].endswith("; no datasheet peak for NVIDIA X: no MFU") and [r["mfu"] for r in records] == [None]
    logged = [json.loads(line) for line in (tmp_path / "u" / "log.jsonl").read_text().splitlines()]
    assert logged[0]["mfu"] is None

    def no_benchmark(*args, **kwargs):
        raise AssertionError("measured the peak although --peak-flops gave one")

    monkeypatch.setattr(bench, "peak_flops", no_benchmark)
    given = train.TrainConfig(steps=2, batch_size=4, seq_len=32, warmup=0, val_every=0, peak_flops=1e12)
    said.clear()
    trainer = train.Trainer(given, tmp_path / "g", progress=False, echo=said.append, train_data=tokens,
                            val_data=tokens)
    records = trainer.run()
    assert said[0].endswith("; MFU against 1 TFLOP/s per device (given by --peak-flops)")
    assert json.loads((tmp_path / "g" / "summary.json").read_text())["peak_source"] == "given by --peak-flops"
    seconds = [4 * 32 / r["tokens_per_s"] for r in records]  # 4 sequences x 32 tokens per step
    assert [r["mfu"] for r in records] == [pytest.approx(trainer.plan.flops_per_step / s / 1e12) for s in seconds]


def test_out_of_memory_halves_the_micro_batch(tmp_path, monkeypatch):
    cfg = train.TrainConfig(steps=2, batch_size=8, seq_len=16, warmup=0, val_every=0)
    messages = []
    trainer = train.Trainer(cfg, tmp_path, progress=False, echo=messages.append)
    trainer.peak = 1e12  # no CPU matmul benchmark
    forward = trainer.parts.model.forward

    def forward_that_ooms_on_big_batches(x):
        if x.shape[0] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(x)

    monkeypatch.setattr(trainer.parts.model, "forward", forward_that_ooms_on_big_batches)
    records = trainer.run()
    assert (trainer.parts.batches.micro, trainer.parts.batches.accum) == (2, 4)  # 8 = 2 x 4: the batch is kept
    assert len(records) == 2 and all(np.isfinite(r["loss"]) for r in records)
    assert sum("micro-batch halved" in m for m in messages) == 2


def test_trainer_config_is_frozen_normalised_and_zero1_needs_torchrun(tmp_path):
    cfg = train.TrainConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.steps = 0  # checked once, where it was made: it cannot change after that
    assert train.TrainConfig(precision="BF16", config="Tiny").precision == "bf16"  # normalised
    with pytest.raises(ValueError, match="torchrun"):
        train.Trainer(train.TrainConfig(zero1=True, steps=2, warmup=0), tmp_path, progress=False)


def test_trainer_honours_lecture_device(tmp_path, monkeypatch):
    """One device policy: with a GPU present, LECTURE_DEVICE=cpu still puts the Trainer on the CPU."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as if on a GPU machine
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("LECTURE_DEVICE", "cpu")
    trainer = train.Trainer(train.TrainConfig(steps=2), tmp_path, progress=False)
    assert trainer.plan.device == torch.device("cpu")
    assert (trainer.plan.precision, trainer.plan.optimizer) == ("fp32", "lecture")  # the CPU's defaults


def test_trainer_reads_lecture_data_when_built(tmp_path, monkeypatch):
    monkeypatch.setenv("LECTURE_DATA", str(tmp_path / "elsewhere"))  # set after lecture_utils was imported
    with pytest.raises(ValueError, match=r"cannot read the train tokens: .*elsewhere/tokens/train.bin does not exist"):
        train.Trainer(train.TrainConfig(steps=2), tmp_path / "run", progress=False)


# --- the command line, end to end

def test_help_lists_every_config_field_with_its_default(capsys):
    with pytest.raises(SystemExit) as exit_:
        train.main(["--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--config", "--steps", "--out", "--ckpt-every", "--resume", "--device", "--batch-size",
                 "--seq-len", "--accum", "--lr", "--min-lr", "--warmup", "--weight-decay", "--clip",
                 "--precision", "--optimizer", "--seed", "--deterministic", "--val-every", "--zero1",
                 "--compile", "--no-progress"):
        assert flag in text, flag
    assert "peak learning rate (default: 0.003)" in text and "min(20, steps)" in text
    assert "python -m lecture_utils.train plot OUT" in text
    with pytest.raises(SystemExit) as exit_:
        train.main(["plot", "--help"])
    text = capsys.readouterr().out
    assert exit_.value.code == 0 and "OUT/log.jsonl" in text and "OUT/curves.png" in text
    args = train.build_parser().parse_args(["--steps", "7", "--out", "x"])
    defaults = train.TrainConfig(steps=7)
    for name in ("batch_size", "lr", "min_lr", "weight_decay", "clip", "seed", "accum", "val_every"):
        assert getattr(args, name) == getattr(defaults, name), name


def test_the_default_warmup_fits_short_runs():
    """`--steps 5` with the default warm-up (20) used to be refused; tests/test_install.py runs
    exactly that command end to end. The config keeps what was given (None: the default); the
    plan resolves it."""
    from lecture_utils.train.resolve import _warmup

    with pytest.raises(ValueError, match=r"^warmup must be in \[0, 100\], got 200$"):
        _warmup(train.TrainConfig(warmup=200, steps=100), None)  # only a resumed run may keep a longer one
    assert _warmup(train.TrainConfig(warmup=200, steps=100), {"resolved": {"warmup": 200}}) == 200
    assert train.TrainConfig(steps=5).warmup is None
    assert _warmup(train.TrainConfig(steps=5), None) == 5 and _warmup(train.TrainConfig(steps=100), None) == 20
    assert _warmup(train.TrainConfig(steps=100, warmup=0), None) == 0
    assert _warmup(train.TrainConfig(steps=100), {"resolved": {"warmup": 7}}) == 7  # a resumed run keeps its own


def test_lecture_device_cuda_without_a_gpu_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.setenv("LECTURE_DEVICE", "cuda")
    with pytest.raises(SystemExit) as exit_:
        train.main(["--steps", "2", "--out", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and "CUDA is not available" in err[0], err
    assert not (tmp_path / "log.jsonl").exists()  # no silent CPU run



# (SIGKILL, then a bit-exact --resume; two gloo processes against one: test_faults_slow.py)


@pytest.mark.parametrize(("args", "reason"), [
    (["--steps", "0", "--out", "x"], "steps must be in [1, inf), got 0"),
    (["--steps", "5", "--out", "x", "--config", "huge"], "unknown config 'huge'"),
    (["--steps", "5", "--out", "x", "--precision", "fp8"], "valid: fp32, bf16, fp16"),
    (["--steps", "5", "--out", "x", "--warmup", "9"], "warmup must be in [0, 5], got 9"),
    (["--steps", "5", "--out", "x", "--lr", "abc"], "invalid float value"),
    (["--steps", "5"], "--out"),
    (["--steps", "5", "--out", "x", "--warmup", "0", "--batch-size", "6", "--accum", "4"], "divisible"),
    (["--steps", "5", "--out", "x", "--warmup", "0", "--device", "cuda:99"], "device 'cuda:99' "),
    (["--steps", "5", "--out", "x", "--warmup", "0", "--zero1"], "torchrun"),
    (["--steps", "5", "--out", "x", "--seed", "4294967296"], "seed must be in [0, 4294967295]"),
    (["--steps", "5", "--out", "x", "--seq-len", "0"], "seq_len must be in [2, inf), got 0"),  # was: 128
    (["--steps", "0", "--out", "plot"], "steps must be"),  # a run's folder named plot, not the plot command
    (["--steps", "5", "--out", "x", "--peak-flops", "-1"], "peak_flops must be in (0, inf), got -1"),
])
def test_bad_arguments_exit_2_with_one_line(args, reason, capsys):
    with pytest.raises(SystemExit) as exit_:
        train.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and reason in err[0], err


@pytest.mark.parametrize(("out", "reason"), [("a_file", "File exists"), ("a_file/run", "Not a directory")])
def test_an_out_folder_that_cannot_be_made_is_one_line_exit_2(tmp_path, out, reason, capsys):
    (tmp_path / "a_file").write_text("not a folder")
    with pytest.raises(SystemExit) as exit_:
        train.main(["--steps", "3", "--out", str(tmp_path / out), *FAST])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"cannot use --out {tmp_path / out}: {reason}" in err[0], err


def test_resume_without_a_checkpoint_is_a_clear_error(tmp_path, capsys):
    # (with an unusable one: test_faults_edges.py, test_an_unusable_checkpoint_at_the_command_line_...)
    with pytest.raises(SystemExit) as exit_:
        train.main(["--steps", "3", "--out", str(tmp_path), "--resume", *FAST])
    assert exit_.value.code == 2 and (f"nothing to resume: no {tmp_path / 'checkpoint.pt'}; start a new run "
                                      "without --resume") in capsys.readouterr().err
