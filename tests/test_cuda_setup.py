"""The CUDA branch of device resolution and of the trainer's process setup, on a CPU.

``torch.cuda`` is patched to look like a two-GPU machine down to the driver call:
``torch.cuda.set_device`` still runs its own argument check (it refuses a device without an
index, before any CUDA call) and then calls ``torch._C._cuda_setDevice``, recorded here.
So dropping the index from ``get_device`` again fails these tests the way the first CUDA
machine would fail the trainer.
"""

import pytest
import torch
import torch.distributed as dist

from lecture_utils import get_device
from lecture_utils.device import DeviceError
from lecture_utils.train import resolve
from lecture_utils.train.resolve import Process, start_process


@pytest.fixture
def two_gpus(monkeypatch):
    """A machine with cuda:0 and cuda:1, cuda:1 current; returns the driver's set-device calls."""
    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    monkeypatch.setattr(torch._C, "_cuda_setDevice", calls.append, raising=False)
    for name in ("LECTURE_DEVICE", "LOCAL_RANK", "WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)
    return calls


def as_torchrun(monkeypatch, local_rank: str = "0") -> None:
    """What torchrun sets in each process it starts (a WORLD_SIZE alone is a shell's leftover)."""
    for name, value in {"WORLD_SIZE": "2", "RANK": local_rank, "LOCAL_RANK": local_rank, "TORCHELASTIC_RUN_ID": "t",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def process_group(monkeypatch):
    """torchrun's process group, recorded instead of started: (backend, device_id) per call."""
    started = []
    monkeypatch.setattr(dist, "is_initialized", lambda: bool(started))
    monkeypatch.setattr(dist, "init_process_group",
                        lambda backend, device_id=None, **kw: started.append((backend, device_id)))
    monkeypatch.setattr(dist, "get_rank", lambda: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    return started


def test_cuda_without_an_index_resolves_to_the_current_device(two_gpus):
    assert get_device() == torch.device("cuda", 1)
    assert get_device("cuda") == torch.device("cuda", 1)
    assert get_device(torch.device("cuda")) == torch.device("cuda", 1)
    assert get_device("cuda:0") == torch.device("cuda", 0)  # an index given is kept


def test_under_torchrun_cuda_is_this_processs_local_rank(two_gpus, monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert get_device() == torch.device("cuda", 0)
    monkeypatch.setenv("LECTURE_DEVICE", "cuda")
    assert get_device() == torch.device("cuda", 0)


@pytest.mark.parametrize("local_rank", ["2", "-1", "one"])
def test_a_local_rank_that_names_no_gpu_is_one_error(two_gpus, monkeypatch, local_rank):
    monkeypatch.setenv("LOCAL_RANK", local_rank)
    with pytest.raises(DeviceError, match=rf"LOCAL_RANK='{local_rank}' names no GPU here; valid: 0 \.\. 1"):
        get_device("cuda")


def test_a_single_process_sets_the_indexed_device_and_starts_no_group(two_gpus, process_group):
    assert start_process() == Process(torch.device("cuda", 1), rank=0, world=1)
    assert two_gpus == [1]  # torch.cuda.set_device accepted the device: it carried its index
    assert process_group == []
    assert start_process("cuda:0").device == torch.device("cuda", 0) and two_gpus == [1, 0]


def test_under_torchrun_the_device_is_set_before_nccl_starts_bound_to_it(two_gpus, process_group, monkeypatch):
    as_torchrun(monkeypatch, local_rank="1")
    order = []
    monkeypatch.setattr(torch._C, "_cuda_setDevice", lambda i: order.append(("set_device", i)), raising=False)
    monkeypatch.setattr(dist, "init_process_group",
                        lambda backend, device_id=None, **kw: order.append((backend, device_id)))
    process = start_process()
    assert process == Process(torch.device("cuda", 1), rank=1, world=2) and process.distributed
    assert order == [("set_device", 1), ("nccl", torch.device("cuda", 1))]


def test_torchrun_on_cpus_uses_gloo_without_a_device(monkeypatch, process_group):
    as_torchrun(monkeypatch)
    monkeypatch.setenv("LECTURE_DEVICE", "cpu")
    assert start_process().device == torch.device("cpu")
    assert process_group == [("gloo", None)]


def test_the_trainer_gets_its_device_from_start_process(monkeypatch, tmp_path):
    """The Trainer resolves its device in one place, resolve.start_process (what the tests above cover)."""
    class Resolved(Exception):
        pass

    def record(device):
        raise Resolved(device)

    from lecture_utils.train import TrainConfig, Trainer

    monkeypatch.setattr(resolve, "start_process", record)
    with pytest.raises(Resolved) as raised:
        Trainer(TrainConfig(steps=1, device="cuda"), tmp_path / "run")
    assert raised.value.args == ("cuda",)
    monkeypatch.undo()
    assert resolve.start_process is start_process  # the one home of the setup
