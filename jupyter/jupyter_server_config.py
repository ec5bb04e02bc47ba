"""`make lab` puts jupyter/ on JUPYTER_CONFIG_PATH, so this configures that Lab only (the user's
~/.jupyter is left alone). A Python file, not JSON: the paths below are this folder's."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
OURS = str(HERE / "labextensions")  # lecture-classroom, built from jupyter/labextension/ (its README)

c = get_config()  # noqa: F821 (Jupyter's config loader provides it)

# Lab's file browser lists the eight notebooks and zh/, not the caches, nor the slideshow's CSS
# (notebooks/rise.css, and NN_topic.css: RISE asks for both when it presents NN_topic.ipynb).
c.ContentsManager.hide_globs = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~", "*.css"]

# Lab loads lecture-classroom beside the extensions installed in .venv.
c.LabApp.extra_labextensions_path = [OURS]
# The slideshow (RISE's own page, built on an older Lab) loads lecture-classroom only: ipywidgets'
# manager and jupytext's menu, built for this Lab, fail there ("Shared module @jupyterlab/console
# doesn't exist"), and neither is needed on a slide (progress bars are text: lecture_utils.progress).
c.RiseApp.labextensions_path = [OURS]
c.RiseApp.extra_labextensions_path = []
