"""lecture_utils.allocator.Allocated: the bytes an allocator hands out, against each tensor's own bytes."""

import subprocess
import sys

import pytest
import torch

from lecture_utils.allocator import Allocated


def test_a_new_tensor_and_a_cast_are_exactly_their_bytes_on_the_cpu():
    w = torch.zeros(32, 32)
    with Allocated("cpu") as grown:
        moved, created = w.to("cpu"), torch.zeros(32, 32)
    with Allocated("cpu") as cast:
        half = created.to(torch.bfloat16)
    assert moved is w  # already there: nothing allocated
    assert (grown.bytes, cast.bytes) == (created.nbytes, half.nbytes) == (4096, 2048)
    assert grown.counter == "the CPU allocator's events (torch.profiler)"


def test_freed_temporaries_and_views_cost_nothing_net():
    x = torch.randn(256, 256)
    with Allocated("cpu") as grown:
        view = x.T  # a view: no storage
        (x * 2).sum()  # a temporary, freed at once
    assert grown.bytes == 0 and view.data_ptr() == x.data_ptr()


def test_on_a_cpu_only_what_the_block_allocated_is_counted():
    """The profiler knows the size of the blocks it saw allocated: a tensor made before the block
    and freed inside it is not subtracted (CUDA's and MPS's counters would subtract it; torch says
    so on stderr, once a process). The notebooks measure blocks that free nothing older."""
    x = torch.empty(1024)
    with Allocated("cpu") as grown:
        del x
    assert grown.bytes == 0


def test_a_tensor_an_earlier_block_made_and_this_one_frees_is_not_subtracted():
    """The profiler remembers the size of a block an earlier profile saw allocated, and reports
    its free: that free is not this block's doing (CUDA's and MPS's counters would subtract it)."""
    with Allocated("cpu") as first:
        old = torch.zeros(1024)
    with Allocated("cpu") as second:
        old = torch.zeros(1024)  # noqa: F841 (the earlier tensor is freed here)
    assert (first.bytes, second.bytes) == (4096, 4096)


def test_a_notebook_cell_run_again_measures_the_same_bytes():
    """Notebook 02's cell, run three times as Shift+Enter does (the names rebound inside the
    blocks free the previous run's tensors): each run allocates 4096 bytes, then casts into 2048."""
    code = (
        "w = torch.zeros(32, 32)\n"
        "with Allocated(device) as grown:\n"
        "    moved, created = w.to(device), torch.zeros(32, 32, device=device)\n"
        "with Allocated(device) as to_bf16:\n"
        "    half = created.to(torch.bfloat16)\n"
    )
    names = {"torch": torch, "Allocated": Allocated, "device": torch.device("cpu")}
    runs = []
    for _ in range(3):
        exec(code, names)
        runs.append((names["grown"].bytes, names["to_bf16"].bytes))
    assert runs == [(4096, 2048)] * 3


def test_torch_adamw_first_step_allocates_its_two_states_and_a_step_counter():
    """The oracle: torch.optim's own state tensors (exp_avg, exp_avg_sq and a 0-dim float32 step)."""
    layer = torch.nn.Linear(1024, 1024, bias=False)
    optimizer = torch.optim.AdamW(layer.parameters(), foreach=False)
    layer(torch.randn(8, 1024)).sum().backward()
    with Allocated("cpu") as grown:
        optimizer.step()
    state = optimizer.state[layer.weight]
    assert grown.bytes == sum(t.nbytes for t in state.values()) == 2 * 1024 * 1024 * 4 + 4


@pytest.mark.slow  # a real process or a full rebuild, seconds: make test-slow (CI)
def test_the_profiler_writes_nothing_to_stderr():
    """Kineto logs each profile's start and stop on stderr, which a notebook shows under the cell."""
    code = "from lecture_utils.allocator import Allocated\nimport torch\nwith Allocated('cpu'):\n    torch.ones(3)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
