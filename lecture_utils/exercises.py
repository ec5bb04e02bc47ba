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

from lecture_utils.checks import CHECK_MARK, _close, _short


@dataclass(frozen=True)
class Answer:
    expected: object
    rel: float = 0
    abs: float = 0
    hints: dict = field(default_factory=dict)  # a wrong value a student is likely to give -> what to look at


ANSWERS: dict[str, Answer] = {
    # notebook 01
    'Q5, stride[0] that view(-1) needs': Answer(12),
    'Q5, extra memory (bytes)': Answer(1_207_959_552, rel=0.01),
    'Q5, memory traffic (bytes)': Answer(2_415_919_104, rel=0.01),
    'E1.1, x[::2, 1:]': Answer(((2, 3), (8, 1), 1)),
    'E1.1, x.T': Answer(((4, 3), (1, 4), 0)),
    'E1.1, x.T[1:, ::2]': Answer(((3, 2), (1, 8), 1)),
    'E1.1, values of x.T[1:, ::2]': Answer([[1, 9], [2, 10], [3, 11]]),
    # notebook 02
    'Q2, gradients lost in fp16': Answer(3),
    'Q2, gradients lost in bf16': Answer(0),
    'Q2, gradients loss scaling rescues': Answer(3),
    'Q2, 1.0 x 2**16 in fp16': Answer(math.inf),
    'Q3, one GPU (params)': Answer(5e9, rel=0.01),
    'Q3, 8 GPUs sharded (params)': Answer(40e9, rel=0.01),
    'Q3, one GPU, 20% held back': Answer(4e9, rel=0.01),
    'Q3, 8 sharded, 20% held back': Answer(32e9, rel=0.01),
    # notebook 03
    'Q4, days at MFU 0.4': Answer(179.9, rel=0.01),
    'Q4, time at MFU 0.4 / at MFU 0.5': Answer(1.25, rel=0.01),
    'E3.1, MFU by 6ND': Answer(0.187, rel=0.02),
    'E3.1, MFU by the exact count': Answer(0.216, rel=0.02),
    # notebook 04
    'Q1, forward FLOPs': Answer(720_896),
    'Q1, backward FLOPs, data input': Answer(1_048_576),
    'Q1, backward FLOPs, input requires grad': Answer(1_441_792),
    'E4.1, params + grads + state (bytes)': Answer(34.36e9, rel=0.01),
    'E4.1, activation bytes per example': Answer(1_081_344),
    'E4.1, largest batch': Answer(42_206, rel=1e-3),
    # notebook 05
    'E5.1 numbers the optimizer updates': Answer(4_194_304),
    'E5.1 state_dict() bytes in fp32': Answer(16_793_600),
    'E5.1 bytes of all registered tensors in bf16': Answer(8_404_992),
    'E5.2 (a) std': Answer(0.015625, rel=5e-3),
    'E5.2 (b) std': Answer(0.0220971, rel=5e-3),
    'E5.2 (c) std': Answer(0.0158375, rel=5e-3),
    'E5.3 trained': Answer("af"),
    'E5.3 saved': Answer("acf"),
    'E5.3 converted': Answer("acdf"),
    # notebook 06
    'E6.1 uint16 bytes': Answer(30e12, rel=1e-9),
    'E6.1 int64 bytes': Answer(120e12, rel=1e-9),
    'E6.1 dtype for 128,256 ids': Answer("uint32"),
    'E6.1 bytes in that dtype': Answer(60e12, rel=1e-9),
    'E6.2 1. batch bytes on disk': Answer(131_200),
    'E6.2 2. pages per window, at most': Answer(2),
    'E6.2 2. pages per window, on average': Answer(1.5, rel=1e-6),
    'E6.2 2. bytes read per batch': Answer(393_216, rel=1e-6),
    'E6.2 3. x + y bytes': Answer(1_048_576),
    'E6.2 3. batches in 80 GB': Answer(76_293),
    # notebook 07
    'E7.1 (a) momentum state (GB)': Answer(28.0, rel=1e-3),
    'E7.1 (b) AdamW state (GB)': Answer(56.0, rel=1e-3),
    'E7.1 (c) 8-bit Adam state (GB)': Answer(14.0273, rel=1e-3),
    'E7.2 stage 1 per GPU (GB)': Answer(71.5, rel=1e-3),
    'E7.2 smallest stage in 80 GB': Answer(1),
    'E7.2 smallest stage in 64 GB': Answer(2),
    # notebook 08
    'E8.1 tokens per step': Answer(1_048_576),
    'E8.1 steps for 300B tokens': Answer(286_103),
    'E8.1 learning rate at step 500': Answer(1.5e-4, rel=1e-6),
    'E8.2 (a) checkpoint bytes per parameter': Answer(12, rel=1e-9),
    'E8.2 (b) checkpoint of a 7B model (GB)': Answer(84.0, rel=1e-3),
    "E8.2 (c) what the notes' checkpoint lacks": Answer("567"),
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
        try:
            if _close(answer, value, spec.rel, spec.abs):
                return hint
        except (AssertionError, TypeError, ValueError, RuntimeError):
            continue
    if not (isinstance(answer, numbers.Real) and isinstance(spec.expected, numbers.Real)) or isinstance(answer, bool):
        return ""
    if not (answer and spec.expected and math.isfinite(answer) and math.isfinite(spec.expected)):
        return ""
    ratio = abs(answer / spec.expected)
    for factor, hint in _FACTORS:
        if any(math.isclose(ratio, r, rel_tol=max(spec.rel, 1e-3)) for r in (factor, 1 / factor)):
            return hint
    return ""


def check_answer(name: str, answer) -> None:
    """An exercise's check cell: one line saying whether ``answer`` is right; never raises.

    ``...`` (the fill-in cell's placeholder) is "not answered yet"; a wrong answer is "not
    right yet", with a hint where it matches a classic mistake, never the expected value.
    """
    spec = ANSWERS[name]  # a KeyError here is the notebook's bug, not the student's
    if answer is Ellipsis:
        print(f"{name}: not answered yet (replace the ... in the cell above and run both cells)")
        return
    try:
        right = _close(answer, spec.expected, spec.rel, spec.abs)
    except (AssertionError, TypeError, ValueError, RuntimeError):
        right = False  # e.g. a string where a number was asked for, or a wrong shape
    if right:
        print(f"{CHECK_MARK} {name}: {_short(answer)} is right")
        return
    hint = _hint(answer, spec)
    print(f"✗ {name}: {_short(answer)} is not right yet" + (f"; hint: {hint}" if hint else
                                                             " (the hidden solution below explains it)"))
