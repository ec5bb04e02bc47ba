"""What `make lab` hands JupyterLab and RISE (jupyter/), and make regen's alt text, checked without
a browser (the browser checks: tests/test_lab_classroom.py, tests/test_live_slides.py)."""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import figure_alt  # noqa: E402

JUPYTER = ROOT / "jupyter"
NOTEBOOKS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
SOURCE, BUILT = JUPYTER / "labextension", JUPYTER / "labextensions" / "lecture-classroom"


def server_config() -> Config:
    config = Config()
    code = (JUPYTER / "jupyter_server_config.py").read_text(encoding="utf-8")
    exec(compile(code, str(JUPYTER / "jupyter_server_config.py"), "exec"),
         {"get_config": lambda: config, "__file__": str(JUPYTER / "jupyter_server_config.py")})
    return config


def overrides() -> dict:
    return json.loads((JUPYTER / "labconfig" / "default_setting_overrides.json").read_text(encoding="utf-8"))


def test_lab_and_the_slideshow_load_the_built_extension_and_the_slideshow_only_it():
    config = server_config()
    assert config.LabApp.extra_labextensions_path == [str(BUILT.parent)]
    assert config.RiseApp.labextensions_path == [str(BUILT.parent)] and config.RiseApp.extra_labextensions_path == []
    built = json.loads((BUILT / "package.json").read_text(encoding="utf-8"))
    source = json.loads((SOURCE / "package.json").read_text(encoding="utf-8"))
    assert (built["name"], built["version"]) == (source["name"], source["version"])
    assert (BUILT / built["jupyterlab"]["_build"]["load"]).is_file()


def test_the_built_extension_is_built_from_the_source():
    """Each plugin id and each CSS class of src/ is in the bundle (rebuild: jupyter/labextension/README.md)."""
    code = (SOURCE / "src" / "index.js").read_text(encoding="utf-8")
    bundle = "".join(p.read_text(encoding="utf-8") for p in (BUILT / "static").glob("*.js"))
    for literal in [*re.findall(r"id: '([^']+)'", code), "lecture-label", "caption"]:
        assert literal in bundle, f"{literal!r} is in src/index.js but not in the built extension: rebuild it"
    assert (SOURCE / "style" / "index.css").read_text(encoding="utf-8").split("*/", 1)[1].split()[0] in bundle


def test_the_extensions_executor_replaces_labs():
    """Lab's own executor shows each markdown cell it runs, a hidden note too: it is off, and the
    extension provides the executor that leaves a note hidden."""
    page_config = json.loads((JUPYTER / "labconfig" / "page_config.json").read_text(encoding="utf-8"))
    assert page_config["disabledExtensions"]["@jupyterlab/notebook-extension:cell-executor"] is True
    assert "provides: INotebookCellExecutor" in (SOURCE / "src" / "index.js").read_text(encoding="utf-8")


def test_shift_enter_steps_over_a_collapsed_section_and_runs_in_place_on_a_slide():
    shortcuts = [s for s in overrides()["@jupyterlab/shortcuts-extension:shortcuts"]["shortcuts"] if s["keys"] == ["Shift Enter"]]
    [heading] = [s for s in shortcuts if "jp-collapseHeadingButton.jp-mod-collapsed" in s["selector"]]
    assert heading["args"]["commands"] == ["notebook:run-cell", "notebook:move-cursor-down"]
    assert ":not(.reveal *)" in heading["selector"]
    [smart] = [s for s in shortcuts if s["command"] == "RISE:smart-exec"]  # run and advance: it opened sections
    assert smart["disabled"] is True
    on_slides = [s for s in shortcuts if ".reveal" in s["selector"] and not s.get("disabled") and s is not heading]
    assert on_slides and {s["command"] for s in on_slides} == {"notebook:run-cell"}


def test_the_slideshow_loads_no_web_font_and_finds_each_notebooks_css():
    """reveal.js's default theme ("simple") imports fonts from the web; RISE asks for NN_topic.css
    beside each notebook."""
    assert overrides()["jupyterlab-rise:plugin"]["theme"] == "white"
    assert "@import" not in (ROOT / "notebooks" / "rise.css").read_text(encoding="utf-8")
    for name in NOTEBOOKS:
        assert (ROOT / "notebooks" / f"{name}.css").is_file(), f"no notebooks/{name}.css"
    assert "*.css" in server_config().ContentsManager.hide_globs  # not in Lab's file browser


# -- make regen's alt text (scripts/figure_alt.py) ------------------------------------------

def test_regen_gives_every_figure_its_caption_as_alt_text_which_nbconverts_classic_html_shows():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    regen = makefile.split("\nregen:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/figure_alt.py" in regen and regen.index("$(EXECUTE)") < regen.index("figure_alt.py")
    nb = nbformat.read(ROOT / "notebooks" / "03_flops_and_mfu.ipynb", as_version=4)
    assert figure_alt.add_alt_text(nb) == []
    figures = [(cell.metadata["caption"], out) for cell in nb.cells for out in cell.get("outputs", [])
               if "image/png" in out.get("data", {})]
    assert len(figures) == 5
    assert all(out.metadata["image/png"]["alt"] == caption for caption, out in figures)
    html, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    alts = re.findall(r'<img [^>]*?alt="([^"]*)"', html)
    assert len(alts) == 5 and "No description has been provided for this image" not in alts


def test_a_figure_without_a_caption_is_named(tmp_path):
    nb = nbformat.read(ROOT / "notebooks" / "03_flops_and_mfu.ipynb", as_version=4)
    index = next(i for i, cell in enumerate(nb.cells) if cell.metadata.get("caption"))
    del nb.cells[index].metadata["caption"]
    path = tmp_path / "planted.ipynb"
    nbformat.write(nb, path)
    assert figure_alt.main([str(path)]) == 1
    with pytest.raises(AssertionError):
        assert figure_alt.add_alt_text(nb) == []
