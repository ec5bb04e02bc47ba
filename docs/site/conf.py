"""Sphinx configuration of the course site (`make site`, scripts/build_site.py).

scripts/build_site.py copies this folder into a temporary folder, adds display copies of
the notebooks (MyST-NB cell tags: build_site.VIEWS) and the generated index, and runs
Sphinx there; notebooks/ is never touched. Why Sphinx + MyST-NB + sphinx-book-theme: all
three are pip packages that build offline from the notebooks' stored outputs, the theme
ships its own JS, CSS and fonts, and Sphinx's search index is a plain script that works
from file://. (Jupyter Book 2 / mystmd downloads its theme at build time, which this
machine cannot do.)
"""

project = "PyTorch and resource accounting"
author = "the course authors"
copyright = "2025, the course authors"

# sphinx_copybutton: a copy button on every code block (ClipboardJS, shipped with it: no network).
extensions = ["myst_nb", "sphinx_togglebutton", "sphinx_copybutton"]
exclude_patterns = ["_build", ".doctrees", "**.ipynb_checkpoints"]

# -- Notebooks: render the stored (golden) outputs, never execute ---------------------
nb_execution_mode = "off"
# MyST-NB would add require.js and the widget manager from CDNs if a notebook stored
# widget state; the pages must not touch the network, so never load them.
nb_ipywidgets_js = {}

# -- Markdown: $...$ / $$...$$ and AMS environments become math for MathJax -----------
myst_enable_extensions = ["dollarmath", "amsmath"]
# Anchors on headings down to ###, so the index can link the README's map to sections.
myst_heading_anchors = 3

# -- MathJax 3 from npm (scripts/vendor.py), copied into _static/mathjax/ by build_site.py
# A relative path is taken relative to _static, so the pages load it from file://.
mathjax_path = "mathjax/tex-chtml.js"

# -- HTML ---------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["_static"]
html_css_files = ["lecture.css"]  # Going-deeper sections set apart; long code lines wrap
html_last_updated_fmt = None
# The pages follow the reader's light or dark setting. Without a default mode the theme starts
# from an empty one and logs "Got invalid theme mode" on every page.
html_context = {"default_mode": "auto"}
html_theme_options = {
    "home_page_in_toc": True,      # the index is the first entry of the sidebar toc
    "use_download_button": True,   # a .ipynb download on every notebook page
    "use_fullscreen_button": False,
    "show_toc_level": 2,           # the in-page toc shows the § sections and their ###
    "navigation_with_keys": True,  # ← and → go to the previous and the next page
    "navbar_persistent": [],       # one search box (the sidebar's), not a second in a header bar
}

# -- Copy buttons: on the code (cell inputs, code blocks in the text), not on outputs --------
# MyST-NB puts a cell's input in div.highlight-ipython3 and an output in div.output.highlight-myst-ansi.
copybutton_selector = 'div[class*="highlight-"]:not(.output) > div.highlight > pre'
