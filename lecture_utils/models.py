"""A small GPT-style decoder built from the lecture's Linear, sized by a config.

Pre-norm blocks (LayerNorm -> causal self-attention -> residual, LayerNorm -> MLP ->
residual), learned token and position embeddings, tied or untied output layer.
``lecture_utils.flops.transformer_flops`` counts exactly the matmuls this model runs.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from lecture_utils import validate
from lecture_utils.nn import Linear

ATTENTION = ("math", "sdpa")


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    seq_len: int  # the longest sequence the position embedding covers
    n_layers: int
    d_model: int
    n_heads: int
    d_ff: int | None = None  # defaults to 4 * d_model
    tie_embeddings: bool = False
    # "math": explicit QK^T, softmax, AV (every matmul visible to FlopCounterMode);
    # "sdpa": F.scaled_dot_product_attention (fused kernels on GPU; uncounted on CPU).
    attention: str = "math"

    def __post_init__(self):  # a config is typed by people (get_config overrides): check it
        for name in ("vocab_size", "seq_len", "n_layers", "d_model", "n_heads"):
            validate.integer(getattr(self, name), name)
        if self.d_ff is not None:
            validate.integer(self.d_ff, "d_ff")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        validate.choice(self.attention, ATTENTION, "attention")

    @property
    def ff(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    def flops_kwargs(self, seq_len: int | None = None) -> dict:
        """Arguments for ``transformer_flops`` describing this model."""
        return {"n_layers": self.n_layers, "d_model": self.d_model, "n_heads": self.n_heads,
                "seq_len": seq_len or self.seq_len, "vocab_size": self.vocab_size,
                "d_ff": self.ff}


CONFIGS: dict[str, GPTConfig] = {
    # Trains on a laptop CPU in seconds. Untied, so that ZeRO's whole-tensor partition
    # can split the two big 8192 x 64 tables between two processes.
    "tiny": GPTConfig(vocab_size=8192, seq_len=128, n_layers=2, d_model=64, n_heads=4),
    # About GPT-2 small; vocabulary 50257 padded to a multiple of 64 for the GPU.
    "gpu": GPTConfig(vocab_size=50304, seq_len=1024, n_layers=12, d_model=768, n_heads=12,
                     attention="sdpa"),
}


def get_config(name: str, **overrides) -> GPTConfig:
    """A named config (``"tiny"``, ``"gpu"``), optionally with fields replaced."""
    return dataclasses.replace(CONFIGS[validate.choice(name, CONFIGS, "config")], **overrides)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_heads, self.attention = cfg.n_heads, cfg.attention
        self.qkv = Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = Linear(cfg.d_model, cfg.d_model)
        mask = torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool).tril()
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        q, k, v = rearrange(self.qkv(x), "b t (three h d) -> three b h t d", three=3, h=self.n_heads)
        if self.attention == "sdpa":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            scores = scores.masked_fill(~self.causal_mask[:t, :t], float("-inf"))
            out = scores.softmax(dim=-1) @ v
        return self.proj(rearrange(out, "b h t d -> b t (h d)"))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.up = Linear(cfg.d_model, cfg.ff)
        self.down = Linear(cfg.ff, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.seq_len, cfg.d_model)
        for emb in (self.tok_emb, self.pos_emb):
            nn.init.trunc_normal_(emb.weight, std=0.02, a=-0.06, b=0.06)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = None if cfg.tie_embeddings else Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Token ids (batch, seq) -> logits (batch, seq, vocab)."""
        t = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        if self.lm_head is None:
            return x @ self.tok_emb.weight.T
        return self.lm_head(x)


def n_params(model: nn.Module, *, non_embedding: bool = False) -> int:
    """Parameter count; ``non_embedding`` leaves out the token and position tables
    (the N of 6ND, whose lookups cost no FLOPs; a tied table is still counted once
    as the output layer)."""
    total = sum(p.numel() for p in model.parameters())
    if non_embedding and isinstance(model, GPT):
        total -= model.pos_emb.weight.numel()
        if model.lm_head is not None:
            total -= model.tok_emb.weight.numel()
    return total


class Cruncher(nn.Module):
    """The lecture's toy MLP (§4.3): ``n_layers`` width x width Linear layers, then a
    width -> 1 head. No nonlinearity by default, as in the lecture; ``relu=True`` puts a
    ReLU after each hidden layer (which, it turns out, costs no extra saved memory)."""

    def __init__(self, width: int, n_layers: int, *, relu: bool = False, device=None, dtype=None):
        super().__init__()
        self.relu = bool(relu)
        self.layers = nn.ModuleList(Linear(width, width, device=device, dtype=dtype)
                                    for _ in range(n_layers))
        self.final = Linear(width, 1, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, width) -> (batch,)"""
        for layer in self.layers:
            x = layer(x)
            if self.relu:
                x = F.relu(x)
        return self.final(x).squeeze(-1)
