"""Figures shared by the notebooks. Each function returns its matplotlib Figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

from lecture_utils.memory import dtype_info

_SIGN, _EXP, _MANT = "#d62728", "#1f77b4", "#2ca02c"


def plot_bit_layout(dtypes=("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")):
    """One row of boxes per dtype: sign, exponent and mantissa bits, to scale."""
    if isinstance(dtypes, str) or not len(dtypes):
        raise ValueError("dtypes must be a non-empty sequence of dtype names")
    infos = [dtype_info(d) for d in dtypes]
    if any(i.exponent_bits == 0 for i in infos):
        bad = [i.name for i in infos if i.exponent_bits == 0]
        raise ValueError(f"bit layout needs floating-point dtypes, got {bad}")
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(infos) + 0.8))
    for row, info in enumerate(infos):
        y = len(infos) - 1 - row
        parts = [("sign", info.sign_bits, _SIGN), ("exponent", info.exponent_bits, _EXP),
                 ("mantissa", info.mantissa_bits, _MANT)]
        x = 0
        for _, n, color in parts:
            for _ in range(n):
                ax.add_patch(Rectangle((x, y + 0.1), 1, 0.8, facecolor=color, edgecolor="white"))
                x += 1
        ax.text(-0.5, y + 0.5, f"{info.name}  ({info.bits} bits)", ha="right", va="center")
        ax.text(x + 0.5, y + 0.5, f"{info.sign_bits}/{info.exponent_bits}/{info.mantissa_bits}",
                ha="left", va="center", color="0.3")
    for label, color in (("sign", _SIGN), ("exponent", _EXP), ("mantissa", _MANT)):
        ax.add_patch(Rectangle((0, 0), 0, 0, facecolor=color, label=label))
    ax.set_xlim(-14, 38)
    ax.set_ylim(-0.1, len(infos) + 0.1)
    ax.axis("off")
    ax.legend(loc="lower right", frameon=False)  # the short fp8 rows leave room there
    ax.set_title("bits per number: sign / exponent (range) / mantissa (precision)", loc="left")
    fig.tight_layout()
    return fig


MAX_STORAGE_DRAWN = 64  # past this, a per-element drawing is unreadable anyway


def plot_strides(x: torch.Tensor, title: str | None = None):
    """Draw a small 2-D tensor's storage as one strip and its elements as a grid.

    Each grid cell is labelled with its storage index ``offset + r*s0 + c*s1`` and
    coloured by row; the storage slot it reads gets the same colour, so a transpose's
    jumps and a slice's gaps are visible. Grey slots are not reachable from the view.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"plot_strides draws 2-D tensors, got shape {tuple(x.shape)}")
    n_storage = x.untyped_storage().nbytes() // x.element_size()
    if n_storage > MAX_STORAGE_DRAWN:
        raise ValueError(f"storage has {n_storage} elements; plot_strides draws at most "
                         f"{MAX_STORAGE_DRAWN} (use a small example tensor)")
    rows, cols = x.shape
    s0, s1 = x.stride()
    off = x.storage_offset()
    cmap = plt.get_cmap("tab10")
    # Which row reads each storage slot (the last one wins for stride-0 views).
    row_of = {off + r * s0 + c * s1: r for r in range(rows) for c in range(cols)}
    fig, (ax_s, ax_t) = plt.subplots(
        2, 1, figsize=(max(6.0, 0.5 * n_storage), 1.6 + 0.5 * rows),
        gridspec_kw={"height_ratios": [1, max(rows, 1)]})
    for i in range(n_storage):
        color = cmap(row_of[i] % 10) if i in row_of else "0.92"
        ax_s.add_patch(Rectangle((i, 0), 1, 1, facecolor=color, alpha=0.45 if i in row_of else 1,
                                 edgecolor="white"))
        ax_s.text(i + 0.5, 0.5, str(i), ha="center", va="center", fontsize=8)
    ax_s.set_xlim(0, n_storage)
    ax_s.set_ylim(0, 1)
    ax_s.axis("off")
    ax_s.set_title(f"storage: {n_storage} elements (colour = the view's row that reads it)",
                   loc="left", fontsize=9)
    for r in range(rows):
        for c in range(cols):
            ax_t.add_patch(Rectangle((c, rows - 1 - r), 1, 1, facecolor=cmap(r % 10), alpha=0.45,
                                     edgecolor="white"))
            ax_t.text(c + 0.5, rows - 0.5 - r, str(off + r * s0 + c * s1), ha="center",
                      va="center", fontsize=9)
    ax_t.set_xlim(0, max(cols, 1))
    ax_t.set_ylim(0, max(rows, 1))
    ax_t.set_aspect("equal")
    ax_t.axis("off")
    ax_t.set_title(title or f"shape {tuple(x.shape)}, stride {x.stride()}, offset {off}",
                   loc="left", fontsize=9)
    fig.tight_layout()
    return fig
