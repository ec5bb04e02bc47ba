"""A model's training memory, predicted from its parameters and measured in a real step.

params + grads + optimizer state + activations (what autograd saves for backward).
The optimizer-state counts come from the lecture's own optimizers (``lecture_utils.optim``),
not from a table typed in here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import nn

from lecture_utils import validate
from lecture_utils.dtypes import as_dtype
from lecture_utils.sizes import tensor_bytes


class _StateCopies(Mapping):
    """``{"sgd": 0, "momentum": 1, ..., "adamw": 2}``: the full-size state tensors each of
    ``lecture_utils.optim.OPTIMIZERS`` keeps, counted by stepping each once on a small
    parameter. Counted on first use, not at import: building the first optimizer imports
    ``torch._dynamo`` (about 1.5 s), which the CLIs should not pay."""

    @functools.cached_property
    def _measured(self) -> tuple[dict[str, int], set[str]]:
        from lecture_utils.optim import OPTIMIZERS

        counts, with_step_counter = {}, set()
        for name, cls in OPTIMIZERS.items():
            p = torch.nn.Parameter(torch.ones(2, 3))
            p.grad = torch.ones(2, 3)
            optimizer = cls([p], lr=0.1)
            optimizer.step()
            state = optimizer.state[p]
            counts[name] = sum(torch.is_tensor(t) and t.shape == p.shape for t in state.values())
            if "step" in state:
                with_step_counter.add(name)
        return counts, with_step_counter

    def keeps_step_counter(self, name: str) -> bool:
        """Whether torch.optim keeps a step count for it: a 4-byte tensor per parameter tensor."""
        return name in self._measured[1]

    def __getitem__(self, name: str) -> int:
        return self._measured[0][name]

    def __iter__(self):
        return iter(self._measured[0])

    def __len__(self) -> int:
        return len(self._measured[0])

    def __repr__(self) -> str:
        return repr(self._measured[0])


OPTIMIZER_STATE_COPIES = _StateCopies()


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes held during a training step, by kind (activations: what autograd saves)."""

    params: int
    grads: int
    optimizer_state: int
    activations: int

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer_state + self.activations


def predict_training_memory(model: nn.Module, *, optimizer: str = "adamw",
                            activations: int = 0) -> TrainingMemory:
    """Predict params, grads and optimizer state from a model's parameters alone.

    Gradients: one same-shape, same-dtype tensor per trainable parameter. Optimizer
    state: ``OPTIMIZER_STATE_COPIES[optimizer]`` copies of the gradients, plus (for the
    adaptive ones) torch's 4-byte ``step`` counter per parameter tensor. ``activations``
    depends on the model's code, so it is passed in (e.g. :func:`mlp_activation_bytes`).
    """
    name = validate.choice(optimizer, OPTIMIZER_STATE_COPIES, "optimizer")
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    grads = sum(tensor_bytes(p) for p in trainable)
    steps = 4 * len(trainable) if OPTIMIZER_STATE_COPIES.keeps_step_counter(name) else 0
    return TrainingMemory(params=sum(tensor_bytes(p) for p in params), grads=grads,
                          optimizer_state=OPTIMIZER_STATE_COPIES[name] * grads + steps,
                          activations=activations)


def mlp_activation_bytes(*, n_layers: int, width: int, batch: int,
                         dtype: str | torch.dtype = "float32") -> int:
    """Bytes autograd saves for ``models.Cruncher`` (L layers of width D, batch B).

    Each of the L + 1 matmuls saves its input (B x D) to compute its weight gradient
    (grad_W = x^T grad_out): (L + 1) * B * D elements. The weights it also saves (for
    grad_x = grad_out W^T) are the parameters themselves, so they cost nothing extra;
    a ReLU saves its output, which is the next matmul's saved input: the same storage.
    The lecture's B*L*D is this without the "+ 1" (the last layer's input).
    """
    assert min(n_layers, width, batch) >= 0, "sizes must be >= 0"
    return (n_layers + 1) * batch * width * as_dtype(dtype).itemsize


def mlp_peak_bytes(*, n_layers: int, width: int, batch: int, optimizer: str = "adamw",
                   dtype: str | torch.dtype = "float32") -> int:
    """Predicted peak of a steady-state training step of ``Cruncher`` (no ReLU, grads set to None).

    The peak comes during backward through the last hidden layer. Alive then:
    parameters, optimizer state, the L saved layer inputs (the head's input was freed as
    soon as the head's backward ran), the gradient flowing in (B x D), the gradient being
    produced for the layer below (B x D), and two weight gradients (D x D and the head's
    D). Valid when the batch is larger than the width (B > D); for B < D the peak moves
    into the end of backward or the optimizer step. On a GPU, allocator rounding and the
    cuBLAS workspace add a few MB on top.
    """
    itemsize = as_dtype(dtype).itemsize
    name = validate.choice(optimizer, OPTIMIZER_STATE_COPIES, "optimizer")
    d, b = width, batch
    params = (n_layers * d * d + d) * itemsize
    state = OPTIMIZER_STATE_COPIES[name] * params + (4 * (n_layers + 1) if OPTIMIZER_STATE_COPIES.keeps_step_counter(name) else 0)
    live = (n_layers * b * d + 2 * b * d + d * d + d) * itemsize
    return params + state + live


def saved_tensor_bytes(fn, *inputs, exclude: list[torch.Tensor] | tuple = ()) -> tuple[int, list]:
    """Run ``fn(*inputs)`` and measure what autograd saves for backward.

    Uses ``torch.autograd.graph.saved_tensors_hooks``: every tensor saved for backward
    passes through the pack hook. Bytes are counted once per distinct storage, and
    storages of ``exclude`` (e.g. the model's parameters) are skipped: saving a weight
    for backward keeps a reference, not a copy. Returns (bytes, [(shape, dtype), ...]
    of the counted tensors) and keeps the output alive only until it returns.
    """
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: dict[int, int] = {}
    saved: list[tuple[tuple[int, ...], torch.dtype]] = []

    def pack(t: torch.Tensor):
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in skip and ptr not in seen:
            seen[ptr] = storage.nbytes()
            saved.append((tuple(t.shape), t.dtype))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(seen.values()), saved


def measure_training_memory(model: nn.Module, inputs: torch.Tensor, optimizer: torch.optim.Optimizer,
                            loss_fn=None) -> TrainingMemory:
    """Run one real training step and measure the bytes of every kind of tensor.

    Activations: the saved-for-backward bytes during the forward pass (parameters
    excluded); params, grads: the tensors themselves; optimizer state: every tensor
    in ``optimizer.state`` after ``step()``. ``loss_fn(output)`` defaults to ``.sum()``.
    """
    loss_fn = loss_fn or (lambda out: out.sum())
    params = list(model.parameters())
    outputs = []
    activations, _ = saved_tensor_bytes(lambda x: outputs.append(model(x)), inputs, exclude=params)
    optimizer.zero_grad(set_to_none=True)
    loss_fn(outputs.pop()).backward()
    optimizer.step()
    state = sum(tensor_bytes(t) for s in optimizer.state.values() for t in s.values()
                if isinstance(t, torch.Tensor))
    return TrainingMemory(params=sum(tensor_bytes(p) for p in params),
                          grads=sum(tensor_bytes(p.grad) for p in params if p.grad is not None),
                          optimizer_state=state, activations=activations)


@dataclass(frozen=True)
class GPTStepMemory:
    """Bytes of one fp32 training step of ``models.GPT`` with ``F.cross_entropy`` (the Trainer's),
    by kind. ``activations`` is what autograd saves (what :func:`saved_tensor_bytes` measures);
    ``peak`` is the most alive at once, reached in the loss's backward."""

    params: int
    grads: int
    optimizer_state: int
    activations_per_layer: int  # one Block's saved tensors
    n_layers: int
    activations_outside_layers: int  # token ids, positions, final LayerNorm, output layer's input
    loss_saved: int  # F.cross_entropy's log-probabilities (N x V), its targets and a scalar
    logits_buffers: int  # the two other N x V tensors alive in the loss's backward

    @property
    def activations(self) -> int:
        return self.n_layers * self.activations_per_layer + self.activations_outside_layers + self.loss_saved

    @property
    def peak(self) -> int:
        """Parameters, optimizer state, every saved tensor and the three N x V buffers of the loss's
        backward (the saved log-probabilities, the gradient flowing in, the logits' gradient).
        No parameter gradient exists yet then: ``zero_grad(set_to_none=True)`` freed them."""
        return self.params + self.optimizer_state + self.activations + self.logits_buffers

    @property
    def step_growth(self) -> int:
        """The peak above what stays allocated between steps (parameters, state, gradients)."""
        return self.peak - (self.params + self.optimizer_state + self.grads)


def gpt_step_memory(cfg, batch: int, seq_len: int | None = None, *, optimizer: str = "adamw") -> GPTStepMemory:
    """Predict :class:`GPTStepMemory` for ``models.GPT(cfg)`` on ``batch`` sequences of ``seq_len``
    tokens (default: the config's), in fp32, from the model's code:

    per Block (N = batch x seq_len tokens, D = d_model, F = d_ff, H = heads), each LayerNorm
    saves its input (N x D) and a mean and a reciprocal std (N each); each Linear its input
    (N x D, or N x F for the MLP's down projection); the qkv output (3 N x D) is saved once,
    as q, k and v are views of it; GELU saves its input (N x F). Attention then adds, for
    ``"sdpa"``, its output (which the output projection saves too: the same storage) and a
    log-sum-exp per row (batch x H x seq_len); for ``"math"``, the softmax's output
    (batch x H x seq_len x seq_len), the mask masked_fill keeps (seq_len^2 bools: ``~mask[:t, :t]``
    is a new tensor, not a view of the cfg.seq_len^2 buffer) and the output projection's input
    (N x D, a copy made by the head merge).
    """
    from lecture_utils.models import GPT  # models imports this package's modules: import late

    batch = validate.integer(batch, "batch")
    t = validate.integer(seq_len if seq_len is not None else cfg.seq_len, "seq_len")
    n, d, f, h, v = batch * t, cfg.d_model, cfg.ff, cfg.n_heads, cfg.vocab_size
    fp32, int64 = 4, 8
    with torch.device("meta"):  # shapes only: no memory, even for the GPU config
        state = predict_training_memory(GPT(cfg), optimizer=optimizer)
    layer = (2 * (n * d + 2 * n)  # two LayerNorms: input, mean, rstd
             + n * d + 3 * n * d + n * d  # qkv input, q/k/v storage, MLP up input
             + 2 * n * f) * fp32  # GELU input and down-projection input
    if cfg.attention == "sdpa":
        layer += (n * d + batch * h * t) * fp32
    else:
        layer += (batch * h * t * t + n * d) * fp32 + t * t
    outside = n * int64 + t * int64 + (n * d + 2 * n + n * d) * fp32
    return GPTStepMemory(params=state.params, grads=state.grads, optimizer_state=state.optimizer_state,
                         activations_per_layer=layer, n_layers=cfg.n_layers, activations_outside_layers=outside,
                         loss_saved=n * v * fp32 + n * int64 + fp32, logits_buffers=2 * n * v * fp32)
