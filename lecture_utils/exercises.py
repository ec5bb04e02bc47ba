"""The exercises' answers and their check: ``check_answer("E6.1 int64 bytes", e6_1_int64_bytes)``.

The expected values live here, in the package, not in the notebook: a check cell's source
(which a student can open) names the exercise and the student's variable, nothing more. A
wrong answer gets a hint where it matches a classic mistake (a factor of 2, a unit, bits
for bytes, another dtype's size). Each notebook's answers sit in its own block below.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

from lecture_utils.checks import CHECK_MARK, _close, _short, rounded_by
from lecture_utils.language import _, translate


@dataclass(frozen=True)
class Answer:
    expected: object
    rel: float = 0
    abs: float = 0
    hints: dict = field(default_factory=dict)  # a wrong value a student is likely to give -> what to look at
    # The generic hints (off by 2, 4, 8, 1000, GiB versus GB, ...) fit amounts of bytes, FLOPs,
    # parameters and time; for a stride, a count or a ratio they would mislead, so each answer opts in.
    factors: bool = False


ANSWERS: dict[str, Answer] = {
    # notebook 01
    'Q5, stride[0] that view(-1) needs': Answer(12, hints={
        1: "that is x.T's stride[0] as it is; what must it equal for dims 0 and 1 to merge?",
        4: "the merge condition is stride[0] == stride[1] * size[1]: times size[1]",
        3: "3 is stride[0] of a row-major (4, 3) tensor, whose stride[1] is 1; x.T's stride[1] is 4"}),
    'Q5, extra memory (bytes)': Answer(1_207_959_552, rel=0.01, factors=True),
    'Q5, memory traffic (bytes)': Answer(2_415_919_104, rel=0.01, factors=True),
    'E1.1, x[::2] from column 1 on': Answer(((2, 3), (8, 1), 1), hints={
        ((2, 3), (4, 1), 1): "::2 keeps every other row: one step down skips two rows of 4"}),
    'E1.1, x.T[1:, ::2]': Answer(((3, 2), (1, 8), 1), hints={
        ((3, 2), (1, 4), 1): "::2 keeps every other column of x.T: the column stride doubles"}),
    'E1.1, values of x.T[1:, ::2]': Answer([[1, 9], [2, 10], [3, 11]]),
    # notebook 02
    'Q2, gradients lost in fp16': Answer(3, hints={
        6: "that counts everything below fp16's smallest normal (6.1e-5); subnormals keep some of those"}),
    'Q2, gradients lost in bf16': Answer(0),
    'Q2, gradients loss scaling rescues': Answer(3),
    'Q2, 1.0 x 2**16 in fp16': Answer(math.inf, hints={
        65536.0: "65536 is above fp16's largest value, 65504",
        65504.0: "fp16 has an inf: an overflowing cast does not saturate (only float8_e4m3fn does)"}),
    'Q3, one GPU with 20% held back': Answer(4e9, rel=0.01, hints={
        5e9: "that is §1.2's limit with nothing held back: only 0.8 x 80 GB is left for the state",
        16e9: "that counts only the fp32 weights: training also keeps gradients and Adam's m and v"}, factors=True),
    'Q3, eight GPUs sharded with 20% held back': Answer(32e9, rel=0.01, hints={
        40e9: "that is §1.2's limit with nothing held back: only 0.8 x 80 GB of each GPU is left",
        4e9: "that is the replicated limit: perfect sharding splits the state 8 ways"}, factors=True),
    "Q3, eight sharded in Megatron's mixed precision with 20% held back": Answer(0.8 * 8 * 80e9 / 18, rel=0.01, hints={
        32e9: "that is 16 bytes per parameter: Megatron keeps an fp32 main gradient, 2 + 4 + 4 + 4 + 4 = 18",
        8 * 80e9 / 18: "hold back the 20%: only 0.8 x 80 GB of each GPU is left for the state"}, factors=True),
    # notebook 03
    'Q4, days at MFU 0.4': Answer(179.9, rel=0.01, hints={
        89.95: "that peak is the sparse 1979 TFLOP/s: divide by the dense one, 1979 / 2",
        115.1: "a lower MFU means a longer run: time is proportional to 1 / MFU",
        28.79: "MFU scales the throughput: days = 6ND / (dense peak x MFU x GPUs) / 86 400"}, factors=True),
    'Q4, time at MFU 0.4 / at MFU 0.5': Answer(1.25, rel=0.01, hints={
        0.8: "time is proportional to 1 / MFU: which of the two runs takes longer?"}),
    'E3.1, MFU by 6ND': Answer(0.187, rel=0.02, hints={
        0.247: "N in 6ND is the non-embedding parameters: an embedding lookup is not a matmul",
        0.129: "85M is GPT-2 small's usual N, the blocks only: this model's output layer is untied, "
               "a matmul of its own (38.6M weights) that 6N must count"}),
    'E3.1, MFU by the exact count': Answer(0.216, rel=0.02, hints={
        0.072: "the exact count is one forward pass: a training step is forward + backward, 3x it",
        0.149: "with N = 85M you left out the untied output layer (38.6M weights), which is a matmul"}),
    # notebook 04
    'Q1, forward FLOPs': Answer(720_896, factors=True),
    'Q1, backward FLOPs, data input': Answer(1_048_576, hints={
        1_441_792: "that is 2 x forward: with a data batch as input, the first layer skips grad_X"}, factors=True),
    'Q1, backward FLOPs, input requires grad': Answer(1_441_792, hints={
        1_048_576: "an input that requires grad needs grad_X, the first layer's included"}, factors=True),
    'E4.1, params + grads + state (bytes)': Answer(34.36e9, rel=0.01, hints={
        25.77e9: "gradients too: one per parameter, as many bytes as the parameters"}, factors=True),
    'E4.1, activation bytes per example': Answer(1_081_344, hints={
        1_048_576: "that is the notes' L * D floats: each of the L + 1 matmuls keeps its input, the data row too"}, factors=True),
    'E4.1, largest batch': Answer(42_206, rel=1e-3, hints={
        43_525: "that is the notes' B * L * D estimate: count the L + 1 saved inputs per example"}),
    # notebook 05
    'E5.1 numbers the optimizer updates': Answer(4_194_304, factors=True),
    'E5.1 state_dict() bytes in fp32': Answer(16_793_600, factors=True),
    'E5.1 bytes of all registered tensors in bf16': Answer(8_404_992, factors=True),
    'E5.2 (a) std': Answer(0.015625, rel=5e-3),
    'E5.2 (b) std': Answer(0.0220971, rel=5e-3),
    'E5.2 (c) std': Answer(0.0158375, rel=5e-3),
    'E5.3 trained': Answer("af"),
    'E5.3 saved': Answer("acf"),
    'E5.3 converted': Answer("acdf"),
    # notebook 06
    'E6.1 uint16 bytes': Answer(30e12, rel=1e-9, factors=True),
    'E6.1 int64 bytes': Answer(120e12, rel=1e-9, factors=True),
    'E6.1 dtype for 128,256 ids': Answer("uint32", hints={
        "uint16": "uint16 holds ids 0 to 65,535: how many bits do 128,256 ids need?"}),
    'E6.1 bytes in that dtype': Answer(60e12, rel=1e-9, factors=True),
    'E6.2 1. batch bytes on disk': Answer(131_200, hints={
        131_072: "a sequence of seq_len inputs is read as seq_len + 1 tokens: y needs the one after"}, factors=True),
    'E6.2 2. pages per window, at most': Answer(2),
    'E6.2 2. pages per window, on average': Answer(1.5, rel=0.01, hints={  # a simulated average counts
        1: "a window of 2,050 bytes can straddle a page boundary: from which start offsets does it?"}),
    'E6.2 2. bytes read per batch': Answer(393_216, rel=0.01, hints={
        131_200: "the operating system reads whole 4 KiB pages, not just the bytes a window uses",
        524_288: "that is every window at its worst (2 pages): use the average pages per window"}, factors=True),
    'E6.2 3. x + y bytes': Answer(1_048_576, hints={
        1_049_600: "x and y each hold seq_len = 1,024 tokens; only the window on disk has 1,025"}, factors=True),
    'E6.2 3. batches in 80 GB': Answer(76_293, hints={
        76_219: "x and y each hold seq_len = 1,024 tokens; only the window on disk has 1,025"}),
    # notebook 07
    'E7.1 (a) AdamW state (GB)': Answer(56.0, rel=1e-3, hints={
        112.0: "that counts the weights and gradients too: the question asks for the optimizer state only",
        28.0: "AdamW keeps two tensors per parameter, m and v"}, factors=True),
    'E7.1 (b) 8-bit Adam state (GB)': Answer(14.0273, rel=1e-3, hints={
        14.0: "close: m and v also keep one fp32 scale per block of 2048 values each"}, factors=True),
    'E7.2 stage 1 per GPU (GB)': Answer(71.5, rel=1e-3, hints={
        208.0: "that is stage 0, nothing sharded: stage 1 splits only the 12 bytes of optimizer state"}, factors=True),
    'E7.2 smallest stage in 64 GB': Answer(2, hints={1: "stage 1 needs more than the 64 GB that are left"}),
    # notebook 08
    'E8.1 steps for 300B tokens': Answer(286_103, hints={
        286_102: "a last, partial step still counts as a step: round up"}),
    'E8.1 learning rate at step 500': Answer(1.5e-4, rel=1e-6, hints={
        6e-4: "step 500 is still inside the 2000 warm-up steps"}),
    'E8.2 (a) checkpoint bytes per parameter': Answer(12, rel=1e-9, hints={
        16: "the gradients are not saved: the next step recomputes them"}, factors=True),
    'E8.2 (b) disk during a save of a 7B model (GB)': Answer(168.0, rel=1e-3, hints={
        84.0: "one checkpoint: until the rename, the old one is still on disk beside the new one",
        224.0: "the gradients are not in a checkpoint"}, factors=True),
}

# Ratios of a wrong answer to the right one that name a classic mistake.
_FACTORS = [(2, "off by a factor of 2: forward and backward, two tensors, or 2 bytes per element?"),
            (8, "off by a factor of 8: bits versus bytes, or an 8-byte dtype?"),
            (4, "off by a factor of 4: float32's 4 bytes per element, or 4 optimizer copies?"),
            (1000, "off by a factor of 1000: a unit prefix (k, M, G, T)?"),
            (1e6, "off by a factor of a million: a unit prefix (M, T)?"),
            (1e9, "off by a factor of a billion: a unit prefix (G)?"),
            (1.073741824, "GiB versus GB: 2**30 bytes versus 10**9?"),
            (1.048576, "MiB versus MB: 2**20 bytes versus 10**6?")]


def _hint(answer, spec: Answer) -> str:
    for value, hint in spec.hints.items():
        if _safely(lambda value=value: bool(_close(answer, value, spec.rel, spec.abs)), False):
            return hint
    rounded = rounded_by(answer, spec.expected)
    if rounded:  # what the value would be in that dtype, never the value itself
        return (_("a bool is True or False, not a number") if "bool" in rounded else
                _("{dtype} holds this answer only rounded (or, past its range, as inf): compute it in float64 "
                  "or int64, or give a Python number").format(dtype=rounded))
    if not (isinstance(answer, numbers.Real) and isinstance(spec.expected, numbers.Real)) or isinstance(answer, bool):
        return ""
    try:
        if not (answer and spec.expected and math.isfinite(answer) and math.isfinite(spec.expected)):
            return ""
        ratio = abs(answer / spec.expected)
    except OverflowError:  # an int beyond any float (10**400): no factor names that mistake
        return ""
    for factor, hint in _FACTORS if spec.factors else ():
        if any(math.isclose(ratio, r, rel_tol=max(spec.rel, 1e-3)) for r in (factor, 1 / factor)):
            return hint
    return ""


def _safely(compute, otherwise):
    """``compute()``, or ``otherwise`` if it raises: a student's answer may be any object at all (a string
    for a number, a wrong shape, 10**400, one whose ``__eq__``, ``__bool__`` or ``__repr__`` raises), and
    each of those is "not right yet", never an error in the check cell."""
    try:
        return compute()
    except Exception:
        return otherwise


def check_answer(name: str, answer) -> None:
    """An exercise's check cell: one line saying whether ``answer`` is right; never raises.

    ``...`` (the fill-in cell's placeholder) is "not answered yet"; a wrong answer is "not
    right yet", with a hint where it matches a classic mistake, never the expected value.
    The answer is compared as given: a tensor's dtype never rounds the expected value (a hint says
    when that dtype rounded the answer itself), and a bool is not a number.
    """
    spec = ANSWERS[name]  # a KeyError here is the notebook's bug, not the student's
    label = translate(name)
    if answer is Ellipsis:
        print(_("{name}: not answered yet (replace the ... in the cell above and run both cells)").format(name=label))
        return
    shown = _safely(lambda: _short(answer), _("a {kind} that cannot be shown").format(kind=type(answer).__name__))
    if _safely(lambda: bool(_close(answer, spec.expected, spec.rel, spec.abs)), False):
        print(f"{CHECK_MARK} " + _("{name}: {value} is right").format(name=label, value=shown))
        return
    hint = _safely(lambda: _hint(answer, spec), "")
    print("✗ " + _("{name}: {value} is not right yet").format(name=label, value=shown) + (
        _("; hint: {hint}").format(hint=_(hint)) if hint else _(" (the hidden solution below explains it)")))
