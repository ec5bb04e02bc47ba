"""Figures shared by the notebooks. Each function returns its matplotlib Figure."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from lecture_utils.dtypes import dtype_info
from lecture_utils.files import replace_atomically
from lecture_utils.language import _

_SIGN, _EXP, _MANT = "#d62728", "#1f77b4", "#2ca02c"


def plot_bit_layout(dtypes=("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")):
    """One row of boxes per dtype: sign, exponent and mantissa bits, to scale."""
    infos = [dtype_info(d) for d in dtypes]
    # An integer has no exponent: its row would silently draw a wrong layout.
    assert all(i.exponent_bits for i in infos), "plot_bit_layout draws floating-point dtypes only"
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(infos) + 0.8))
    for row, info in enumerate(infos):
        y = len(infos) - 1 - row
        x = 0
        for n, color in ((info.sign_bits, _SIGN), (info.exponent_bits, _EXP), (info.mantissa_bits, _MANT)):
            for _bit in range(n):
                ax.add_patch(Rectangle((x, y + 0.1), 1, 0.8, facecolor=color, edgecolor="white"))
                x += 1
        ax.text(-0.5, y + 0.5, f"{info.name}  ({info.bits} bits)", ha="right", va="center")
        ax.text(x + 0.5, y + 0.5, f"{info.sign_bits}/{info.exponent_bits}/{info.mantissa_bits}",
                ha="left", va="center", color="0.3")
    for label, color in ((_("sign"), _SIGN), (_("exponent"), _EXP), (_("mantissa"), _MANT)):
        ax.add_patch(Rectangle((0, 0), 0, 0, facecolor=color, label=label))
    ax.set_xlim(-14, 38)
    ax.set_ylim(-0.1, len(infos) + 0.1)
    ax.axis("off")
    ax.legend(loc="lower right", frameon=False)  # the short fp8 rows leave room there
    ax.set_title("bits per number: sign / exponent (range) / mantissa (precision)", loc="left")
    fig.tight_layout()
    return fig


MAX_STORAGE_DRAWN = 64  # past this, a per-element drawing is unreadable anyway


def plot_strides(x: torch.Tensor | dict[str, torch.Tensor], title: str | None = None):
    """Draw a small 2-D tensor's storage as one strip and its elements as a grid.

    Each grid cell is labelled with its storage index ``offset + r*s0 + c*s1`` and
    coloured by row; the storage slot it reads gets the same colour, so a transpose's
    jumps and a slice's gaps are visible. Grey slots are not reachable from the view.

    ``x`` may also be a dict ``{label: view}``: one column per view, side by side in one
    wide, short figure (it fits a 16:9 slide), each titled with its label, shape, stride
    and offset; ``title`` then heads the figure. The axes come in pairs, storage strip
    then grid, one pair per view.
    """
    views = x if isinstance(x, dict) else {None: x}
    n_storage = {label: v.untyped_storage().nbytes() // v.element_size() for label, v in views.items()}
    for n in n_storage.values():
        assert n <= MAX_STORAGE_DRAWN, f"storage of {n} elements: use a small example tensor"
    shapes = {label: tuple(v.shape) for label, v in views.items()}
    for shape in shapes.values():
        if len(shape) != 2:
            raise ValueError(f"plot_strides draws 2-D tensors, got shape {shape}")
    max_rows = max(rows for rows, _cols in shapes.values())
    cmap = plt.get_cmap("tab10")
    if len(views) == 1:
        width = max(8.0, 0.6 * max(n_storage.values()))
        fig = plt.figure(figsize=(width, 2.0 + 0.6 * max_rows))
    else:  # one column per view, each slot about a third of an inch wide
        width = 14.0
        slot = width / len(views) / (max(n_storage.values()) + 1)
        fig = plt.figure(figsize=(width, round(1.3 + slot * (1.6 + max_rows), 1)))
    grid_spec = fig.add_gridspec(2, len(views), height_ratios=[1, max(max_rows, 1)])
    for j, (label, v) in enumerate(views.items()):
        rows, cols = shapes[label]
        s0, s1 = v.stride()
        off = v.storage_offset()
        ax_s, ax_t = fig.add_subplot(grid_spec[0, j]), fig.add_subplot(grid_spec[1, j])
        # Which row reads each storage slot (the last one wins for stride-0 views).
        row_of = {off + r * s0 + c * s1: r for r in range(rows) for c in range(cols)}
        for i in range(n_storage[label]):
            color = cmap(row_of[i] % 10) if i in row_of else "0.92"
            ax_s.add_patch(Rectangle((i, 0), 1, 1, facecolor=color, alpha=0.45 if i in row_of else 1,
                                     edgecolor="white"))
            ax_s.text(i + 0.5, 0.5, str(i), ha="center", va="center", fontsize=12)
        ax_s.set_xlim(0, n_storage[label])
        ax_s.set_ylim(0, 1)
        ax_s.set_aspect("equal")
        ax_s.axis("off")
        for r in range(rows):
            for c in range(cols):
                ax_t.add_patch(Rectangle((c, rows - 1 - r), 1, 1, facecolor=cmap(r % 10), alpha=0.45,
                                         edgecolor="white"))
                ax_t.text(c + 0.5, rows - 0.5 - r, str(off + r * s0 + c * s1), ha="center",
                          va="center", fontsize=12)
        ax_t.set_xlim(0, max(cols, 1))
        ax_t.set_ylim(0, max(rows, 1))
        ax_t.set_aspect("equal")
        ax_t.axis("off")
        described = f"shape {shapes[label]}, stride {v.stride()}, offset {off}"
        if label is None:
            ax_s.set_title(f"storage: {n_storage[label]} elements (colour = the view's row that reads it)",
                           loc="left", fontsize=13)
            ax_t.set_title(title or described, loc="left", fontsize=13)
        else:
            ax_s.set_title(f"{label}\n{described}", loc="left", fontsize=13)
    if len(views) > 1:
        fig.suptitle(title or "storage strip above, the view's elements below (colour = the view's row)",
                     x=0.01, ha="left", fontsize=13)
    fig.tight_layout()
    return fig


ROOFLINE_FIGSIZE = (12.0, 4.8)  # fixed, so the figure's text repr never depends on the data


def plot_roofline(points, peak_flops, bandwidth, title=None):
    """Measured points against a roofline: achieved FLOP/s over arithmetic intensity, log-log.

    ``points`` is a sequence of ``(label, intensity, flops_per_s)``: intensity in FLOP per
    byte moved, achieved rate in FLOP/s. ``peak_flops`` (FLOP/s) and ``bandwidth``
    (bytes/s) set the ceiling ``min(peak_flops, bandwidth * intensity)``; the ridge point,
    where the two meet, sits at intensity ``peak_flops / bandwidth``. Left of it a kernel
    is memory-bound, right of it compute-bound. The figure size is fixed whatever the data.
    """
    peak, bw = peak_flops, bandwidth
    checked = [(label, intensity, rate) for label, intensity, rate in points]
    ridge = peak / bw
    xs = [p[1] for p in checked]
    x_lo, x_hi = min(*xs, ridge) / 4, max(*xs, ridge) * 4
    x = np.union1d(np.geomspace(x_lo, x_hi, 200), [ridge])  # sorted, with the kink exactly
    ceiling = np.minimum(peak, bw * x)

    # constrained layout makes room for the legend beside the axes: nothing leaves the figure
    fig, ax = plt.subplots(figsize=ROOFLINE_FIGSIZE, layout="constrained")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axvspan(x_lo, ridge, color="0.5", alpha=0.06, lw=0)
    ceiling_line, = ax.plot(x, ceiling, color="black", lw=2, gid="ceiling")
    ax.axvline(ridge, color="0.4", ls=":", lw=1, gid="ridge")
    ax.plot([ridge], [peak], "D", color="black", ms=6)
    left_part = math.log(ridge / x_lo) / math.log(x_hi / x_lo)  # where the ridge sits, 0..1
    ax.annotate(f"ridge: {ridge:.3g} FLOP/byte", (ridge, peak), textcoords="offset points",
                xytext=(-6, 6) if left_part > 0.4 else (6, 6),
                ha="right" if left_part > 0.4 else "left", fontsize=12)
    ax.text(0.01, 0.98, "← memory-bound", transform=ax.transAxes, ha="left", va="top",
            fontsize=12, color="0.3")
    ax.text(0.99, 0.98, "compute-bound →", transform=ax.transAxes, ha="right", va="top",
            fontsize=12, color="0.3")
    cmap = plt.get_cmap("tab10")
    colors = [cmap(i % 10) for i in range(len(checked))]
    xs, ys = [p[1] for p in checked], [p[2] for p in checked]
    ax.scatter(xs, ys, c=colors, s=30, zorder=3, gid="points")
    # One legend entry per point (labels beside the points would collide where several
    # share an intensity), after the ceiling's own entry; the legend sits right of the axes.
    handles = [ceiling_line] + [Line2D([], [], ls="none", marker="o", color=c) for c in colors]
    ax.legend(handles, [f"ceiling = min(peak {peak:.3g} FLOP/s,\n  {bw:.3g} B/s × intensity)",
                        *(p[0] for p in checked)], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=12,
              frameon=False, borderaxespad=0)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(min(*ys, bw * x_lo) / 2, max(*ys, peak) * 3)
    ax.set_xlabel("arithmetic intensity (FLOP / byte moved)", fontsize=13)
    ax.set_ylabel("achieved FLOP/s", fontsize=13)
    ax.tick_params(labelsize=12)
    ax.set_title(title or "roofline", loc="left", fontsize=14)
    return fig


CURVES_FIGSIZE, CURVES_DPI = (15.0, 5.0), 100  # projector-sized: 1500 x 500 pixels


def plot_training_curves(log_path_or_records, path=None):
    """The trainer's log as three panels over the step: train and validation loss, learning
    rate, tokens/s.

    ``log_path_or_records`` is a run folder, its ``log.jsonl`` (one JSON object per step:
    ``step``, ``loss``, ``lr``, ``tokens_per_s`` and, every ``val_every`` steps,
    ``val_loss``) or those records as a list of dicts. With ``path`` the figure is also
    saved there as a PNG, atomically: a temporary file beside it is renamed over it, so an
    existing file is never left half-written. ``python -m lecture_utils.train plot OUT``
    checks the log first and calls this.
    """
    records = log_path_or_records
    if isinstance(records, (str, os.PathLike)):
        log = Path(records)
        log = log / "log.jsonl" if log.is_dir() else log
        records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    steps = [r["step"] for r in records]
    val = [(r["step"], r["val_loss"]) for r in records if "val_loss" in r]
    with plt.rc_context({"font.size": 13}):
        fig, (ax_loss, ax_lr, ax_tps) = plt.subplots(1, 3, figsize=CURVES_FIGSIZE, dpi=CURVES_DPI,
                                                     layout="constrained")
        ax_loss.plot(steps, [r["loss"] for r in records], marker="o", label="train loss")
        if val:
            ax_loss.plot(*zip(*val, strict=True), marker="s", markersize=9, label="validation loss")
        ax_loss.set(xlabel="step", ylabel="cross-entropy (nats)", title="Loss")
        # Below the axes, so it never hides a curve whatever the losses do.
        ax_loss.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
        ax_lr.plot(steps, [r["lr"] for r in records], marker="o", color="C2")
        ax_lr.set(xlabel="step", ylabel="learning rate", title="Learning rate (warm-up, then cosine)")
        ax_tps.plot(steps, [r["tokens_per_s"] for r in records], marker="o", color="C3")
        ax_tps.set(xlabel="step", ylabel="tokens / s", title="Throughput (measured)")
        ax_tps.set_ylim(bottom=0)
        for ax in (ax_loss, ax_lr, ax_tps):
            ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        if path is not None:  # the old figure stays whole until the new one is
            replace_atomically(path, lambda f: fig.savefig(f, format="png"))
    return fig


OPTIMIZER_PATHS_FIGSIZE = (14.0, 5.4)  # wide and short: full width on a 1280 x 720 slide, under its code line


def plot_optimizer_paths(paths, curvature=(1.0, 50.0), labels=None, title=None):
    """Each optimizer's path over the contours of f(x, y) = (a x² + b y²) / 2, one panel each.

    ``paths`` maps a name to the points it visited, a (steps + 1, 2) tensor or array whose
    first row is the start; ``curvature`` is (a, b); ``labels`` maps a name to what its panel
    title adds in brackets (its hyper-parameters). Each title also gives f at the last point.
    Panels sit in rows of three, sharing their axes; the start is a dot, the minimum a star.
    """
    a, b = curvature
    points = {name: np.asarray(path, dtype=float) for name, path in paths.items()}
    every = np.concatenate(list(points.values()))
    (x_lo, y_lo), (x_hi, y_hi) = every.min(axis=0), every.max(axis=0)
    pad_x, pad_y = 0.08 * (x_hi - x_lo) + 0.1, 0.08 * (y_hi - y_lo) + 0.1
    X, Y = np.meshgrid(np.linspace(x_lo - pad_x, x_hi + pad_x, 200), np.linspace(y_lo - pad_y, y_hi + pad_y, 200))
    f = 0.5 * (a * X**2 + b * Y**2)
    cols = min(3, len(points))
    rows = math.ceil(len(points) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=OPTIMIZER_PATHS_FIGSIZE, sharex=True, sharey=True,
                             squeeze=False, layout="constrained")
    for ax, (name, p) in zip(axes.flat, points.items(), strict=False):  # a last row may have spare axes
        ax.contour(X, Y, f, levels=np.geomspace(0.05, f.max(), 12), colors="0.7",
                   linewidths=0.7)
        ax.plot(p[:, 0], p[:, 1], ".-", color="C3", lw=1, ms=3, gid="path")
        ax.plot(p[0, 0], p[0, 1], "ko", ms=5)
        ax.plot(0, 0, "k*", ms=9)
        final = 0.5 * (a * p[-1, 0] ** 2 + b * p[-1, 1] ** 2)
        extra = f" ({labels[name]})" if labels and name in labels else ""
        ax.set_title(f"{name}{extra}\nf after {len(p) - 1} steps: {final:.3g}", fontsize=12)
    for ax in axes.flat[len(points):]:
        ax.axis("off")
    fig.supxlabel("x")
    fig.supylabel("y")
    ax2 = "x²" if a == 1 else f"{a:g} x²"
    fig.suptitle(title or f"f(x, y) = ({ax2} + {b:g} y²) / 2: same start, same number of steps", fontsize=14)
    return fig
