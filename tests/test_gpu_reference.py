"""docs/gpu/reference.md: every figure sourced and labelled, every GPU-only block covered, specs as in hardware.py."""

import ast
import re
from pathlib import Path

import pytest

from lecture_utils.hardware import ACCELERATORS

ROOT = Path(__file__).resolve().parents[1]
TWINS = [ROOT / "py_src" / f"{name}.py" for name in (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()]  # the eight, named exactly
REFERENCE = ROOT / "docs" / "gpu" / "reference.md"
LABELS = ("published, not measured here", "no published figure found")
# The spec rows and the hardware.py number each must equal: (accelerator, field, dtype, unit).
SPECS = {
    "h100-sxm-bf16": ("H100 SXM", "dense_flops", "bf16", 1e12),
    "h100-sxm-tf32": ("H100 SXM", "dense_flops", "tf32", 1e12),
    "h100-sxm-fp32": ("H100 SXM", "dense_flops", "fp32", 1e12),
    "h100-sxm-hbm": ("H100 SXM", "hbm_bandwidth", None, 1e9),
    "h100-sxm-host-link": ("H100 SXM", "host_bandwidth", None, 1e9),
    "h200-hbm": ("H200", "hbm_bandwidth", None, 1e9),
    "a100-sxm-bf16": ("A100 SXM 80GB", "dense_flops", "bf16", 1e12),
    "a100-sxm-tf32": ("A100 SXM 80GB", "dense_flops", "tf32", 1e12),
    "a100-sxm-fp32": ("A100 SXM 80GB", "dense_flops", "fp32", 1e12),
    "a100-80gb-hbm": ("A100 SXM 80GB", "hbm_bandwidth", None, 1e9),
    "a100-host-link": ("A100 SXM 80GB", "host_bandwidth", None, 1e9),
}


def rows() -> dict[str, dict]:
    """Every row of reference.md's figure tables (not the benchmark targets), by its key, as
    {column header: cell}."""
    table, header = {}, None
    for line in REFERENCE.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(cells[0]) <= {"-", " "} and "published value" in header:
            assert len(cells) == len(header), line
            table[cells[0].strip("`")] = dict(zip(header, cells, strict=True))
    return table


def test_every_figure_has_a_source_and_says_it_is_published_not_measured():
    table = rows()
    assert len(table) >= 20
    for key, row in table.items():
        assert row["label"] in LABELS, (key, row["label"])
        assert row["source"] and row["figure"] and row["published value"], key
        if row["label"] == LABELS[0]:  # a published figure names where it was published
            assert "http" in row["source"] or "(URL above)" in row["source"], key
        else:
            assert "no published figure found" in row["published value"] or row["published value"].startswith(
                "no published"), key
    assert "**Measured here:**" in REFERENCE.read_text(encoding="utf-8")


def test_every_cuda_only_block_of_every_notebook_is_mapped():
    # An independent reading of the notebooks: the literal string after cuda_only(device, ...
    blocks = {(py.stem[:2], what) for py in TWINS
              for what in re.findall(r'cuda_only\(device, "([^"]+)"\)', py.read_text(encoding="utf-8"))}
    assert len(blocks) >= 12
    covered = " ".join(row["stands in for"] for row in rows().values())
    missing = sorted(f"{nb}: {what}" for nb, what in blocks if f"{nb}: {what}" not in covered)
    assert not missing, f"GPU-only blocks with no row in reference.md: {missing}"


@pytest.mark.parametrize("key", sorted(SPECS))
def test_spec_numbers_agree_with_the_hardware_table(key):
    name, field, dtype, unit = SPECS[key]
    published = float(re.match(r"[\d,.]+", rows()[key]["published value"]).group().replace(",", ""))
    value = getattr(ACCELERATORS[name], field)
    value = value[dtype] if dtype else value
    assert published * unit == pytest.approx(value, rel=1e-9), (key, published, value / unit)


def _refs() -> dict[str, list[tuple[str, str]]]:
    """Every measured(..., ref="KEY") in the notebooks' twins: KEY -> [(notebook, its block's what)]."""
    found: dict[str, list[tuple[str, str]]] = {}
    for py in TWINS:
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for block in ast.walk(tree):
            test = getattr(block, "test", None) if isinstance(block, ast.If) else None
            if not (isinstance(test, ast.Call) and getattr(test.func, "id", None) == "cuda_only"):
                continue
            for call in ast.walk(block):
                ref = next((k.value.value for k in getattr(call, "keywords", []) if k.arg == "ref"), None)
                if isinstance(call, ast.Call) and ref:
                    found.setdefault(ref, []).append((py.stem[:2], test.args[1].value))
    return found


def test_each_gpu_measurement_is_declared_once_in_its_cell_and_fills_its_row():
    """The GPU check fills a row's "Measured here" from the value a cell printed with ref=KEY: no
    table in a script. Every such row has exactly one cell measuring it, inside the block it names."""
    table, refs = rows(), _refs()
    measurable = {k for k, r in table.items() if not r["Measured here"].startswith("—")}
    assert sorted(set(refs) - set(table)) == [], "ref= names no row of reference.md"
    assert sorted(measurable - set(refs)) == [], "rows no cell measures (add measured(..., ref=KEY) in its block)"
    for key, places in refs.items():
        assert len(places) == 1, (key, places)
        notebook, what = places[0]
        assert f"{notebook}: {what}" in table[key]["stands in for"], key
