"""The tracers against independent oracles: torch's own nbytes, autograd's saved tensors."""

import gc

import torch

from lecture_utils.trace import LiveBytes, OpLog, SavedTensors


def test_oplog_counts_one_kernel_per_eager_op_with_its_bytes():
    x = torch.randn(1000)
    with OpLog() as log:
        y = torch.sin(x) + x * x
    assert log.names() == ["sin", "mul", "add"]
    n = x.nbytes
    assert [(op.read, op.written) for op in log.ops] == [(n, n), (n, n), (2 * n, y.nbytes)]
    assert log.count("mul") == (1, n)  # x * x reads x once
    assert log.count("matmul") == (0, 0)


def test_oplog_sees_in_place_zeroing():
    grads = [torch.ones(4, 4), torch.ones(8)]
    with OpLog() as log:
        for g in grads:
            g.zero_()
    assert log.count("zero_") == (2, sum(g.nbytes for g in grads))


def test_livebytes_peak_matches_storage_nbytes():
    a = torch.randn(100)
    with LiveBytes([a]) as live:
        b = a * 2                 # + 400 bytes
        c = torch.zeros(50, 10)   # + 2000 bytes
        peak_expected = a.untyped_storage().nbytes() + b.untyped_storage().nbytes() \
            + c.untyped_storage().nbytes()
        del c
        gc.collect()
        after_free = live.current
        d = b.view(10, 10)        # a view: no new storage
        d.add_(1)                 # in place: no new storage
    assert live.peak == peak_expected == 2800
    assert after_free == a.nbytes + b.nbytes
    assert live.current == after_free
    assert live.at_peak == {(100,): 2, (50, 10): 1}


def test_saved_tensors_matches_what_autograd_keeps():
    x = torch.tensor(2.0)
    w = torch.tensor(4.0, requires_grad=True)
    with SavedTensors() as saved:
        y = 0.5 * (x * w - 5) ** 2
    assert [t.item() for t in saved.tensors] == [2.0, 3.0]
    y.backward()
    assert w.grad.item() == saved.tensors[0].item() * saved.tensors[1].item()
    with SavedTensors() as outside:
        pass
    assert outside.tensors == []


def test_saved_tensors_hooks_are_removed_on_exit():
    with SavedTensors() as saved:
        pass
    w = torch.ones(3, requires_grad=True)
    (w * w).sum()
    assert saved.tensors == []
