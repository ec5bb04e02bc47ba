"""Napkin math from the shell: ``python -m lecture_utils estimate|memory|gpus``.

    python -m lecture_utils estimate --params 70e9 --tokens 15e12 --gpu H100 --gpus 1024 --mfu 0.5
    python -m lecture_utils memory --params 70e9 --recipe fp32-adamw --gpus 8 --sharded
    python -m lecture_utils gpus
"""

from __future__ import annotations

import argparse
import sys

from lecture_utils.console import closed_pipe, describe, guarded_output
from lecture_utils.dtypes import SPEC_NAMES
from lecture_utils.flops import SECONDS_PER_DAY, training_days, training_flops
from lecture_utils.hardware import ACCELERATORS, find_accelerator
from lecture_utils.recipes import (
    RECIPES,
    max_params_that_fit,
    param_breakdown,
    recipe_name,
    training_state_table,
)
from lecture_utils.sizes import format_bytes


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints the usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


# Every argument is checked here, where it is typed: one line naming the value and what
# would be valid, exit 2 (argparse prefixes "argument --name:").

LARGEST = 1e30  # far beyond any training run, and small enough that bytes and days stay finite


def _number(text: str) -> float:
    """A number in (0, 1e30], written 70e9, 70_000_000_000 or 7.0E10."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= LARGEST:
        raise argparse.ArgumentTypeError(f"not a positive number up to {LARGEST:g}: {text!r}")
    return value


def _count(text: str) -> int:
    """A whole number >= 1 (parameters, GPUs); 7e9 is fine."""
    value = _number(text)
    if value != int(value):
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(value)


def _fraction(text: str) -> float:
    """A fraction of peak in [1e-6, 1] (MFU); below that the time is no longer a number of days."""
    value = _number(text)
    if not 1e-6 <= value <= 1:
        raise argparse.ArgumentTypeError(f"not a fraction of peak in [1e-06, 1]: {text!r}")
    return value


def _lookup(find):
    """An argparse type from a lookup that raises ValueError with the valid choices."""
    def parse(text: str):
        try:
            return find(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    parse.__name__ = find.__name__
    return parse


_recipe, _gpu = _lookup(recipe_name), _lookup(find_accelerator)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m lecture_utils",
                     description="Napkin math for training runs (CS336 Lecture 2).")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    est = sub.add_parser("estimate", help="training FLOPs (6ND) and days on N GPUs",
                         description="Total training FLOPs by 6ND and the wall-clock time at a "
                                     "given MFU, against the GPU's DENSE peak.")
    est.add_argument("--params", type=_number, required=True, help="parameters N, e.g. 70e9")
    est.add_argument("--tokens", type=_number, required=True, help="training tokens D, e.g. 15e12")
    est.add_argument("--gpu", type=_gpu, default="H100", help="accelerator (see `gpus`); default H100")
    est.add_argument("--gpus", type=_count, required=True, help="number of GPUs")
    est.add_argument("--mfu", type=_fraction, default=0.5, help="model FLOPs utilisation in (0, 1]; default 0.5")
    est.add_argument("--dtype", choices=SPEC_NAMES, default="bf16", help="compute dtype; default bf16")

    mem = sub.add_parser("memory", help="training-state bytes per GPU, and whether it fits",
                         description="Bytes per GPU for weights, gradients and optimizer state "
                                     "(activations not included).")
    mem.add_argument("--params", type=_count, required=True, help="parameters N, e.g. 70e9")
    mem.add_argument("--recipe", type=_recipe, default="fp32_adamw",
                     help=f"one of {', '.join(r.replace('_', '-') for r in RECIPES)}; default fp32-adamw")
    mem.add_argument("--gpus", type=_count, default=1, help="number of GPUs; default 1")
    mem.add_argument("--sharded", action="store_true", help="split the state across GPUs (ZeRO-3 / FSDP)")
    mem.add_argument("--gpu", type=_gpu, default="H100", help="accelerator whose memory to fit into; default H100")

    sub.add_parser("gpus", help="list the hardware table (dense peaks)",
                   description="The accelerators known to lecture_utils.hardware, dense peaks in TFLOP/s.")
    return parser


def _estimate(args) -> None:
    flops = training_flops(args.params, args.tokens)
    acc = args.gpu
    days = training_days(flops.total, acc, args.gpus, args.mfu, args.dtype)
    peak = acc.peak(args.dtype)
    sparse = acc.sparse_flops.get(args.dtype)
    print(f"training FLOPs: 6 x {args.params:.4g} params x {args.tokens:.4g} tokens = {flops.total:.4g}"
          f"  (forward 2ND = {flops.forward:.4g}, backward 4ND = {flops.backward:.4g})")
    note = f"; the spec sheet's {sparse / 1e12:g} assumes 2:4 sparsity, not used" if sparse else ""
    print(f"peak: {acc.name} {args.dtype} dense {peak / 1e12:g} TFLOP/s per GPU{note}")
    rate = peak * args.mfu * args.gpus
    print(f"throughput: {args.gpus} GPUs x {peak / 1e12:g} TFLOP/s x MFU {args.mfu:g} = {rate:.4g} FLOP/s")
    print(f"time: {flops.total / rate:.4g} s = {days:.1f} days"
          f"  ({days * SECONDS_PER_DAY / 3600:.4g} hours)")


def _memory(args) -> None:
    n = args.params
    rows = training_state_table(n, n_gpus=args.gpus, sharded=args.sharded, recipe=args.recipe)
    layout = f"sharded over {args.gpus}" if args.sharded else f"replicated on each of {args.gpus}"
    parts = " + ".join(str(b) for b in param_breakdown(args.recipe).values())
    print(f"{n:.4g} params, {args.recipe.replace('_', '-')} ({parts} bytes/param), {layout} GPU(s)")
    for part, size in rows:
        print(f"  {part:<22} {format_bytes(size):>22} per GPU")
    budget = args.gpu.memory_bytes
    verdict = "fits" if rows[-1][1] <= budget else "does NOT fit"
    limit = max_params_that_fit(budget, n_gpus=args.gpus, recipe=args.recipe, sharded=args.sharded)
    print(f"{verdict} in one {args.gpu.name} ({format_bytes(budget)}), before activations; "
          f"largest that fits: {limit:.4g} params")


def _gpus(_args) -> None:
    head = f"{'accelerator':<14} {'fp32':>6} {'tf32':>7} {'bf16':>7} {'fp16':>7} {'fp8':>7}  {'memory':>7} {'HBM GB/s':>8}  host link"
    print("dense peak TFLOP/s (spec sheets' 2:4-sparsity figures are twice the tensor-core ones)")
    print(head)
    for acc in ACCELERATORS.values():
        peaks = "".join(f"{acc.dense_flops[d] / 1e12:>{6 if d == 'fp32' else 8}g}" if d in acc.dense_flops
                        else f"{'-':>{6 if d == 'fp32' else 8}}" for d in SPEC_NAMES)
        print(f"{acc.name:<14}{peaks}  {acc.memory_bytes / 1e9:>5g}GB {acc.hbm_bandwidth / 1e9:>8g}  "
              f"{acc.host_link} ({acc.host_bandwidth / 1e9:g} GB/s each way)")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    with guarded_output() as (out, _):
        try:
            {"estimate": _estimate, "memory": _memory, "gpus": _gpus}[args.command](args)
        except (ValueError, TypeError) as err:  # the calculators' checks (e.g. --mfu): same one line
            parser.error(str(err))
        out.flush()  # a full disk shows up when the buffered lines are written
    if out.lost and not closed_pipe(out.lost):  # a reader that went away (| head) needs no word
        print(f"{parser.prog}: error: cannot write the output: {describe(out.lost)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
