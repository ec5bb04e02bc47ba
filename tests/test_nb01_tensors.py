"""Notebook 01 (tensors, storage and strides): the package checks that left its core path.

The notebook teaches with torch itself; what it takes from ``lecture_utils`` (the opening
estimate's helpers, ``tensor_bytes``, ``format_bytes``, ``plot_strides`` and the exercises'
expected answers) is checked here, each against an independent oracle: the notes' own
arithmetic, a real tensor's storage, or torch computing the exercise.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from lecture_utils.exercises import ANSWERS  # noqa: E402
from lecture_utils.flops import training_days, training_flops  # noqa: E402
from lecture_utils.plots import plot_strides  # noqa: E402
from lecture_utils.recipes import bytes_per_param  # noqa: E402
from lecture_utils.sizes import format_bytes, tensor_bytes

X = torch.arange(12).view(3, 4)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --- the opening estimate (§1.1-§1.2), against the notes' own code --------------------


def test_opening_estimate_matches_the_notes_arithmetic():
    total_flops = 6 * 70e9 * 15e12
    h100_flop_per_sec = 1979e12 / 2  # the notes: the spec sheet's sparse figure, halved
    flops_per_day = h100_flop_per_sec * 0.5 * 1024 * 60 * 60 * 24
    assert training_flops(70e9, 15e12).total == total_flops == 6.3e24
    assert training_days(total_flops, "H100", n_gpus=1024, mfu=0.5) == pytest.approx(total_flops / flops_per_day)
    assert round(total_flops / flops_per_day) == 144


def test_fp32_adamw_state_is_four_fp32_tensors_per_parameter():
    one = torch.zeros(1, dtype=torch.float32)
    assert bytes_per_param("fp32_adamw") == 4 * one.untyped_storage().nbytes() == 16
    assert format_bytes(70e9 * 16) == "1.12 TB (1.02 TiB)"
    assert 70e9 * 16 / 1e12 == pytest.approx(1.12) and 70e9 * 16 / 2**40 == pytest.approx(1.0186, abs=1e-4)


# --- tensor_bytes: logical bytes, while a storage may hold fewer ------------------------


def test_tensor_bytes_of_the_notes_example_is_its_storage():
    assert tensor_bytes(X) == X.untyped_storage().nbytes() == 96


def test_tensor_bytes_counts_an_expanded_view_logically():
    row = torch.arange(4)
    e = row.expand(3, 4)
    assert e.stride() == (0, 1)
    assert e.untyped_storage().nbytes() == 32  # one row is held ...
    assert tensor_bytes(e) == 96 == e.contiguous().untyped_storage().nbytes()  # ... three are counted


def test_a_copy_of_the_timed_matrix_moves_twice_its_bytes():
    big = torch.zeros(2048, 2048)
    assert tensor_bytes(big) == big.untyped_storage().nbytes() == 16_777_216
    assert 2 * tensor_bytes(big) == 33_554_432


# --- the exercises' expected answers, recomputed by torch -------------------------------


def test_q5_answers_agree_with_torch():
    xt = X.transpose(0, 1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        xt.view(-1)
    assert ANSWERS["Q5, stride[0] that view(-1) needs"].expected == xt.stride(1) * xt.size(1) == 12
    # the copy of the bf16 FFN matrix: on the meta device, contiguous() gives the new strides
    wt = torch.empty(12288, 49152, dtype=torch.bfloat16, device="meta").T.contiguous()
    assert wt.stride() == (12288, 1)
    extra = wt.numel() * wt.element_size()
    assert extra == tensor_bytes(wt) == tensor_bytes((12288, 49152), "bf16")
    assert ANSWERS["Q5, extra memory (bytes)"].expected == extra
    assert ANSWERS["Q5, memory traffic (bytes)"].expected == 2 * extra
    assert (format_bytes(extra), format_bytes(2 * extra)) == ("1.21 GB (1.12 GiB)", "2.42 GB (2.25 GiB)")


def test_e1_1_answers_agree_with_torch():
    def metadata(v):
        return (tuple(v.shape), v.stride(), v.storage_offset())

    assert ANSWERS["E1.1, x[::2] from column 1 on"].expected == metadata(X[::2, 1:])
    assert ANSWERS["E1.1, x.T[1:, ::2]"].expected == metadata(X.T[1:, ::2])
    assert ANSWERS["E1.1, values of x.T[1:, ::2]"].expected == X.T[1:, ::2].tolist()


def test_exercise_hints_name_wrong_answers_only():
    for name in ("Q5, stride[0] that view(-1) needs", "E1.1, x[::2] from column 1 on", "E1.1, x.T[1:, ::2]"):
        spec = ANSWERS[name]
        assert spec.hints and spec.expected not in spec.hints


# --- plot_strides: several views side by side, for a slide ------------------------------

VIEWS = {"x": X, "x.T": X.T, "x[:, 1:3]": X[:, 1:3], "x[1:, ::2]": X[1:, ::2]}


def test_several_views_are_drawn_side_by_side_in_a_slide_shaped_figure():
    fig = plot_strides(VIEWS)
    width, height = fig.get_size_inches()
    assert len(fig.axes) == 2 * len(VIEWS)
    assert height / width <= 560 / 1280  # full width on a 1280 x 720 slide, at most 560 px tall
    strips, grids = fig.axes[0::2], fig.axes[1::2]
    assert len({round(ax.get_position().x0, 3) for ax in strips}) == len(VIEWS)  # one column each
    for (label, v), strip, grid in zip(VIEWS.items(), strips, grids, strict=True):
        # X = arange, so each element's value *is* its storage index: an independent oracle.
        assert sorted(int(t.get_text()) for t in grid.texts) == sorted(v.flatten().tolist())
        assert len(strip.patches) == 12
        assert strip.get_title(loc="left").startswith(f"{label}\nshape {tuple(v.shape)}, stride {v.stride()}")


def test_one_view_keeps_the_strip_then_grid_layout_and_its_title():
    fig = plot_strides(X.T, "the transpose")
    assert len(fig.axes) == 2
    assert fig.axes[1].get_title(loc="left") == "the transpose"
    assert fig.axes[0].get_title(loc="left").startswith("storage: 12 elements")


@pytest.mark.parametrize(("bad", "error"), [({"x": X, "row": torch.arange(3)}, ValueError),
                                            ({"x": X, "big": torch.zeros(100, 100)}, AssertionError)])
def test_several_views_refuse_what_one_view_refuses(bad, error):
    with pytest.raises(error):
        plot_strides(bad)


def test_the_figure_text_is_readable():
    fig = plot_strides(VIEWS)
    hidden = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for t in axis.findobj(matplotlib.text.Text)}
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text() and id(t) not in hidden]  # axes are off
    assert len(texts) > 4 * 12 and min(t.get_fontsize() for t in texts) >= 12
