"""The notebooks' ipywidgets calculators: training memory (02) and training time (03).

Each returns a widget box; where widgets cannot render (static HTML, nbval), the
notebooks show the static twin instead (``training_state_table``, ``training_time_table``).
ipywidgets is imported inside the functions: the package needs it only when a calculator
is built.
"""

from __future__ import annotations

from lecture_utils.flops import training_days, training_flops
from lecture_utils.hardware import ACCELERATORS, find_accelerator
from lecture_utils.recipes import RECIPES, max_params_that_fit, training_state_table
from lecture_utils.sizes import format_bytes


def memory_calculator():
    """An ipywidgets calculator: parameters, recipe, GPUs, sharded or not."""
    import ipywidgets as w

    # Text boxes, not log sliders: a browser snaps a slider to its step grid (7e9 -> 7.08e9)
    n_params = w.BoundedFloatText(value=7e9, min=1e6, max=1e13, description="params")
    recipe = w.Dropdown(options=list(RECIPES), value="fp32_adamw", description="recipe")
    n_gpus = w.IntSlider(value=8, min=1, max=1024, description="GPUs")
    gpu_gb = w.FloatText(value=80.0, description="GB / GPU")
    sharded = w.Checkbox(value=False, description="sharded (ZeRO-3)")
    out = w.HTML()

    def update(*_):
        rows = training_state_table(int(n_params.value), n_gpus=n_gpus.value,
                                    sharded=sharded.value, recipe=recipe.value)
        budget = gpu_gb.value * 1e9
        cells = "".join(f"<tr><td>{p}</td><td>{format_bytes(b)}</td></tr>" for p, b in rows)
        fits = "fits" if rows[-1][1] <= budget else "does NOT fit"
        limit = max_params_that_fit(budget, n_gpus=n_gpus.value, recipe=recipe.value,
                                    sharded=sharded.value) if budget > 0 else 0
        out.value = (f"<table>{cells}</table><p>per GPU: <b>{fits}</b> in {gpu_gb.value:g} GB; "
                     f"largest that fits: {limit / 1e9:.3g}B parameters</p>")

    for widget in (n_params, recipe, n_gpus, gpu_gb, sharded):
        widget.observe(update, names="value")
    update()
    return w.VBox([n_params, recipe, n_gpus, gpu_gb, sharded, out])


def training_time_calculator():
    """An ipywidgets calculator: params, tokens, GPU, count, MFU -> days (6ND, dense peak)."""
    import ipywidgets as w

    # Text boxes, not log sliders: a browser snaps a slider to its step grid, and the lecture's
    # 70e9 and 15e12 would open as 7.08e10 and 1.58e13 (153.8 days, not 143.9)
    params = w.BoundedFloatText(value=70e9, min=1e6, max=1e15, description="params")
    tokens = w.BoundedFloatText(value=15e12, min=1e6, max=1e16, description="tokens")
    gpu = w.Dropdown(options=list(ACCELERATORS), value="H100 SXM", description="GPU")
    count = w.IntText(value=1024, description="GPUs")
    utilisation = w.FloatSlider(value=0.5, min=0.05, max=1.0, step=0.05, description="MFU")
    out = w.HTML()

    def update(*_):
        if count.value < 1:  # the one box a user can type a bad value into
            out.value = "<p>GPUs must be at least 1</p>"
            return
        total = training_flops(int(params.value), int(tokens.value)).total
        days = training_days(total, gpu.value, count.value, utilisation.value)
        peak = find_accelerator(gpu.value).peak("bf16")
        out.value = (f"<p>6ND = {total:.3g} FLOPs; dense bf16 peak {peak / 1e12:g} TFLOP/s per GPU"
                     f"<br><b>{days:.1f} days</b> on {count.value} x {gpu.value} at MFU "
                     f"{utilisation.value:.2f}</p>")

    for widget in (params, tokens, gpu, count, utilisation):
        widget.observe(update, names="value")
    update()
    return w.VBox([params, tokens, gpu, count, utilisation, out])
