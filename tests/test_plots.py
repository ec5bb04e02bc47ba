import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from lecture_utils.plots import plot_bit_layout, plot_strides  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_bit_layout_draws_one_box_per_bit():
    fig = plot_bit_layout(["float32", "bfloat16", "float8_e4m3fn"])
    ax = fig.axes[0]
    boxes = [p for p in ax.patches if p.get_width() > 0]
    assert len(boxes) == 32 + 16 + 8
    labels = {t.get_text() for t in ax.texts}
    assert {"1/8/23", "1/8/7", "1/4/3"} <= labels


@pytest.mark.parametrize("bad", [[], "float32", ["int64"], ["float13"]])
def test_bit_layout_rejects_bad_dtypes(bad):
    with pytest.raises(ValueError):
        plot_bit_layout(bad)


X = torch.arange(12).view(3, 4)


@pytest.mark.parametrize("v", [X, X.T, X[1:, ::2], X[:, 1:3]], ids=["x", "x.T", "x[1:,::2]", "x[:,1:3]"])
def test_stride_figure_labels_each_element_with_its_storage_index(v):
    # x = arange, so each element's value *is* its storage index: an independent oracle.
    fig = plot_strides(v)
    grid = fig.axes[1]
    labels = sorted(int(t.get_text()) for t in grid.texts)
    assert labels == sorted(v.flatten().tolist())
    storage = fig.axes[0]
    assert len(storage.patches) == 12


def test_stride_figure_colours_storage_by_the_row_that_reads_it():
    fig = plot_strides(X.T)  # row r of X.T reads storage slots r, r+4, r+8
    slots = fig.axes[0].patches
    for r in range(4):
        assert len({slots[i].get_facecolor() for i in (r, r + 4, r + 8)}) == 1
    assert len({slots[i].get_facecolor() for i in range(4)}) == 4


@pytest.mark.parametrize(("bad", "error"), [(torch.arange(3), ValueError), ([[1, 2]], TypeError),
                                            (torch.zeros(100, 100), ValueError)])
def test_stride_figure_rejects_bad_input(bad, error):
    with pytest.raises(error):
        plot_strides(bad)
