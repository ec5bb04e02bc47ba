import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from lecture_utils.plots import (  # noqa: E402
    ROOFLINE_FIGSIZE,
    plot_bit_layout,
    plot_roofline,
    plot_strides,
    plot_training_curves,
)


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


@pytest.mark.parametrize(("bad", "error"), [(["int64"], AssertionError),  # no exponent: a wrong drawing
                                            (["float13"], ValueError)])  # the dtype table's lookup
def test_bit_layout_refuses_what_it_cannot_draw(bad, error):
    with pytest.raises(error):
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


@pytest.mark.parametrize(("bad", "error"), [(torch.arange(3), ValueError),  # 2-D only
                                            (torch.zeros(100, 100), AssertionError),  # unreadable
                                            ({"x": X, "row": torch.arange(3)}, ValueError),  # so in a dict too
                                            ({"x": X, "big": torch.zeros(100, 100)}, AssertionError)])
def test_stride_figure_refuses_what_it_cannot_draw(bad, error):
    with pytest.raises(error):
        plot_strides(bad)


VIEWS = {"x": X, "x.T": X.T, "x[:, 1:3]": X[:, 1:3], "x[1:, ::2]": X[1:, ::2]}


def test_several_views_are_drawn_side_by_side_in_a_slide_shaped_figure_with_readable_text():
    fig = plot_strides(VIEWS)
    width, height = fig.get_size_inches()
    assert len(fig.axes) == 2 * len(VIEWS)
    assert height / width <= 560 / 1280  # full width on a 1280 x 720 slide, at most 560 px tall
    strips, grids = fig.axes[0::2], fig.axes[1::2]
    assert len({round(ax.get_position().x0, 3) for ax in strips}) == len(VIEWS)  # one column each
    for (label, v), strip, grid in zip(VIEWS.items(), strips, grids, strict=True):
        assert sorted(int(t.get_text()) for t in grid.texts) == sorted(v.flatten().tolist())
        assert len(strip.patches) == 12
        assert strip.get_title(loc="left").startswith(f"{label}\nshape {tuple(v.shape)}, stride {v.stride()}")
    hidden = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for t in axis.findobj(matplotlib.text.Text)}
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text() and id(t) not in hidden]  # axes are off
    assert len(texts) > 4 * 12 and min(t.get_fontsize() for t in texts) >= 12
    one = plot_strides(X.T, "the transpose")  # one view: strip, then grid, under its own title
    assert len(one.axes) == 2 and one.axes[1].get_title(loc="left") == "the transpose"
    assert one.axes[0].get_title(loc="left").startswith("storage: 12 elements")


def test_optimizer_paths_figure_draws_each_path_in_its_own_panel():
    from lecture_utils.plots import OPTIMIZER_PATHS_FIGSIZE, plot_optimizer_paths

    paths = {"a": torch.tensor([[-8.0, 1.5], [-4.0, -1.0], [0.0, 0.0]]),
             "b": np.array([[-8.0, 1.5], [-7.0, 1.0]]), "c": torch.zeros(4, 2)}
    fig = plot_optimizer_paths(paths, curvature=(1.0, 50.0))
    drawn = [ax for ax in fig.axes if ax.get_title()]
    assert len(drawn) == 3 and len(fig.axes) == 3  # one row of three
    for ax, (name, path) in zip(drawn, paths.items(), strict=True):
        line = next(line for line in ax.lines if line.get_gid() == "path")
        np.testing.assert_array_equal(np.column_stack([line.get_xdata(), line.get_ydata()]), np.asarray(path))
        final = 0.5 * (path[-1][0] ** 2 + 50 * path[-1][1] ** 2)
        assert ax.get_title().startswith(name) and f"f after {len(path) - 1} steps: {float(final):.3g}" in ax.get_title()
    fig = plot_optimizer_paths({str(i): torch.zeros(2, 2) for i in range(4)})  # two rows, two spare axes
    width, height = fig.get_size_inches()
    assert (width, height) == OPTIMIZER_PATHS_FIGSIZE and width / height >= 1280 / 560  # full width on a slide
    assert sum(ax.axison for ax in fig.axes) == 4
    texts = [t for ax in fig.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label)] + [fig._suptitle]
    assert min(t.get_fontsize() for t in texts if t.get_text()) >= 12


# --- plot_roofline --------------------------------------------------------------------

PEAK, BW = 1e12, 1e10  # ridge at 100 FLOP/byte
POINTS = [("elementwise", 0.1, 5e8), ("small matmul", 20.0, 1e11), ("big matmul", 500.0, 8e11)]


def _by_gid(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, f"expected one artist with gid {gid!r}, found {len(found)}"
    return found[0]


def test_roofline_ceiling_is_min_of_peak_and_bandwidth_times_intensity():
    ax = plot_roofline(POINTS, PEAK, BW).axes[0]
    line = _by_gid(ax, "ceiling")
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert np.all(np.diff(x) > 0)
    np.testing.assert_allclose(y, np.minimum(PEAK, BW * x), rtol=1e-12)
    # The line spans every point and the ridge, and contains the kink exactly.
    assert x[0] < 0.1 and x[-1] > 500.0
    assert 100.0 in x and y[x == 100.0][0] == PEAK
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_roofline_marks_the_ridge_at_peak_over_bandwidth():
    ax = plot_roofline(POINTS, PEAK, BW).axes[0]
    ridge = _by_gid(ax, "ridge")
    assert list(ridge.get_xdata()) == [100.0, 100.0]
    assert any(t.get_text() == "ridge: 100 FLOP/byte" for t in ax.texts)


def test_roofline_draws_each_point_with_its_label():
    ax = plot_roofline(POINTS, PEAK, BW, title="my title").axes[0]
    offsets = _by_gid(ax, "points").get_offsets()
    np.testing.assert_array_equal(np.asarray(offsets), [[p[1], p[2]] for p in POINTS])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("ceiling") and legend[1:] == [p[0] for p in POINTS]
    assert ax.get_title(loc="left") == "my title"
    # Every point is inside the axes' limits.
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert all(x0 < p[1] < x1 and y0 < p[2] < y1 for p in POINTS)


def test_roofline_figure_size_does_not_depend_on_the_data():
    sizes = {tuple(plot_roofline(pts, peak, bw).get_size_inches())
             for pts, peak, bw in [(POINTS, PEAK, BW), (POINTS[:1], 3e14, 2e12),
                                   ([("far", 1e-4, 1.0)] * 12, 1e9, 1e11)]}
    assert sizes == {ROOFLINE_FIGSIZE}


def test_roofline_accepts_a_point_above_the_ceiling():
    # A measured point can beat a ceiling (cache-resident data, a noisy measured peak):
    # it is drawn, not rejected.
    ax = plot_roofline([("in cache", 0.1, 5e9)], PEAK, BW).axes[0]
    assert ax.get_ylim()[1] > 5e9


RECORDS = [{"step": s, "loss": 10.0 - s, "lr": 0.1 * s, "tokens_per_s": 100.0 + s, "grad_norm": 1.0}
           | ({"val_loss": 10.5 - s} if s % 2 == 0 else {}) for s in range(1, 7)]


@pytest.mark.parametrize("source", ["records", "folder", "file"])
def test_training_curves_draw_each_logged_field_against_the_step(tmp_path, source):
    (tmp_path / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    given = {"records": RECORDS, "folder": tmp_path, "file": tmp_path / "log.jsonl"}[source]
    fig = plot_training_curves(given)
    loss, lr, tps = fig.axes
    steps = [1, 2, 3, 4, 5, 6]
    train_line, val_line = loss.lines
    assert list(train_line.get_xdata()) == steps and list(train_line.get_ydata()) == [9, 8, 7, 6, 5, 4]
    assert list(val_line.get_xdata()) == [2, 4, 6] and list(val_line.get_ydata()) == [8.5, 6.5, 4.5]
    assert list(lr.lines[0].get_ydata()) == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert list(tps.lines[0].get_ydata()) == [101, 102, 103, 104, 105, 106]
    assert tps.get_ylim()[0] == 0  # throughput from zero: a dip is not exaggerated


def test_training_curves_are_projector_sized_and_the_legend_hides_no_curve():
    fig = plot_training_curves(RECORDS)
    assert tuple(fig.get_size_inches()) == (15, 5)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        assert ax.title.get_fontsize() >= 13 and ax.xaxis.label.get_fontsize() >= 13
        title = ax.title.get_window_extent(renderer)
        assert fig.bbox.x0 <= title.x0 and title.x1 <= fig.bbox.x1 and title.y1 <= fig.bbox.y1  # not clipped
    legend = fig.axes[0].get_legend().get_window_extent(renderer)
    plot_area = fig.axes[0].get_window_extent(renderer)
    assert not legend.overlaps(plot_area)  # outside the axes, so over no curve
    assert fig.bbox.y0 <= legend.y0  # and still on the figure


def test_training_curves_without_validation_draw_one_loss_line():
    fig = plot_training_curves([{k: v for k, v in r.items() if k != "val_loss"} for r in RECORDS])
    assert len(fig.axes[0].lines) == 1


def test_saving_the_curves_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / "curves.png"
    plot_training_curves(RECORDS, target)
    good = target.read_bytes()
    assert good.startswith(b"\x89PNG")

    def crash(self, file, **kw):  # a full disk half-way through writing the temporary file
        file.write(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plt.Figure, "savefig", crash)
    with pytest.raises(OSError):
        plot_training_curves(RECORDS, target)
    assert target.read_bytes() == good  # the old figure, whole
    assert [p.name for p in tmp_path.iterdir()] == ["curves.png"]  # no temporary left behind


def test_roofline_text_is_projector_sized_and_inside_the_figure():
    fig = plot_roofline(POINTS, PEAK, BW)
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert all(t.get_fontsize() >= 12 for t in legend.get_texts())
    assert all(t.get_fontsize() >= 12 for t in ax.texts)  # ridge label, memory/compute-bound
    fig.canvas.draw()
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    for artist in [legend, ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]:
        b = artist.get_window_extent(renderer)
        assert b.x0 >= 0 and b.y0 >= 0 and b.x1 <= box.x1 and b.y1 <= box.y1, artist


def test_no_figure_text_is_set_below_12_pt():
    """Projector-sized text: every explicit font size in the notebooks and the package is >= 12."""
    root = Path(__file__).resolve().parents[1]
    small = [f"{path.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
             for path in [*sorted((root / "py_src").glob("*.py")), *sorted((root / "lecture_utils").rglob("*.py"))]
             for text in [path.read_text(encoding="utf-8")]
             for m in re.finditer(r"\b(?:fontsize|labelsize|size)=(\d+(?:\.\d+)?)\b", text)
             if float(m.group(1)) < 12]
    assert small == []
