# Two commands do everything on a fresh machine: `make lab` and `make test`.
# Both create .venv (pinned by constraints.txt) on first use.

SHELL := /bin/bash
# The golden outputs were recorded with Python 3.11; prefer it when present.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
KERNEL := pytorch-resource-accounting
# The eight notebooks, named exactly in notebooks.txt (one name a line): a copy made in Lab
# (08_training_loop-Copy1.ipynb), a student's own notebook or an odd file name (a space, a `$(...)`)
# never joins a target, and no file name found on disk reaches the shell.
LESSONS := $(shell cat notebooks.txt)
NOTEBOOKS := $(LESSONS:%=notebooks/%.ipynb)
# The Chinese edition (make zh): generated from the English notebooks and locale/zh_CN, then run there,
# so that what the code prints and draws is Chinese too (lecture_utils/language.py).
ZH_NOTEBOOKS := $(LESSONS:%=notebooks/zh/%.ipynb)
LAB_ARGS ?=

.PHONY: help setup lab test test-slow unit nbval run regen export lint lint-workflows wheel bench mutation data corpus gpu-check gpu-rehearsal clean \
	site slides site-check i18n zh

help:  ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "The pinned versions in constraints.txt need Python >= 3.11; found $$($(PYTHON) --version)."; \
		echo "Run e.g. make test PYTHON=/path/to/python3.11"; exit 1; }
	@# a venv without pip is one an interrupted setup left half-made: made again from scratch
	@$(BIN)/python -c 'import pip' 2>/dev/null || { test ! -e $(VENV) || echo "$(VENV) is incomplete (an interrupted make setup?): making it again"; \
		$(PYTHON) -m venv --clear $(VENV); }
	@echo "make setup: installing the pinned packages of constraints.txt into $(VENV) (once: about 2.5 minutes"
	@echo "  on 2 cores, plus the download; torch is most of it: 192 MB as PyTorch's CPU build, 2.7 GB as PyPI's"
	@echo "  CUDA build on Linux; README, Setting up, says how to pick the CPU one)..."
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# setuptools' "Editable installation" box (mind folders named like the package) is advice, not a fault
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) \
		--display-name "Python ($(KERNEL))" >/dev/null
	@echo "make setup: done; $(VENV) has the pinned packages and the Jupyter kernel $(KERNEL)"
	@touch $@

setup: $(STAMP)  ## create .venv, install pinned deps, register the Jupyter kernel

# Jupyter refuses to start as root (Docker, cloud VMs, CI images) without --allow-root:
# pass it then, and only then.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

# Lab serves the repository but opens in notebooks/ (the eight notebooks, and zh/: their Chinese
# edition, from make zh): rooted at notebooks/, jupytext could not write the paired .py twin in
# py_src/ on save.
# jupyter/ joins Jupyter's config path for this Lab only (the user's ~/.jupyter is left
# alone): its labconfig/page_config.json turns off the "official Jupyter news?" prompt.
lab: $(STAMP)  ## set up, then open JupyterLab in notebooks/
	JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
		$(BIN)/jupyter lab --notebook-dir=. --LabApp.default_url=/lab/tree/notebooks \
		$(LAB_ROOT) $(LAB_ARGS)

# One intra-op thread per process under xdist: two workers (plus their notebook kernels)
# on two cores otherwise oversubscribe, and OpenMP's spin-waiting doubles the CPU time.
XDIST_ENV := OMP_NUM_THREADS=1
# One worker per notebook (its cells share a kernel) and per test module or class; the
# multi-process tests are classes of their own, queued first by tests/conftest.py, whose
# order --no-loadscope-reorder keeps (xdist would otherwise start with the largest counts).
XDIST_DIST := --dist loadscope --no-loadscope-reorder

test: $(STAMP)  ## set up, then unit tests + nbval of every notebook, English and Chinese (strict)
	$(XDIST_ENV) $(BIN)/python -m pytest tests $(NOTEBOOKS) $(ZH_NOTEBOOKS) -m "not site and not slow" -n auto $(XDIST_DIST) \
		--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
		--nbval-cell-timeout 120

test-slow: $(STAMP)  ## the slow multi-process fault tests (torchrun, real signals, closed pipes); CI runs them
	$(XDIST_ENV) $(BIN)/python -m pytest tests -m slow -n auto $(XDIST_DIST)

unit: $(STAMP)  ## unit tests only
	$(XDIST_ENV) $(BIN)/python -m pytest tests -m "not site and not slow" -n auto $(XDIST_DIST)

nbval: $(STAMP)  ## nbval only
	$(XDIST_ENV) $(BIN)/python -m pytest $(NOTEBOOKS) -n auto $(XDIST_DIST) \
		--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

# `make run` and `make regen` execute with nbconvert (nbclient): a fresh kernel per notebook,
# run from notebooks/ as in Lab, on the CPU that recorded the goldens (LECTURE_DEVICE=... picks
# another for `make run`), with no progress bars (LECTURE_PROGRESS=0: lecture_utils.progress draws
# none, so none is stored; make test and make nbval get it from the root conftest.py). Per-cell
# timing and widget state are left out of the .ipynb: they change on every run and would make
# noisy diffs. A cell tagged raises-exception may raise.
EXECUTE := LECTURE_DEVICE=$${LECTURE_DEVICE:-cpu} PYDEVD_DISABLE_FILE_VALIDATION=1 LECTURE_PROGRESS=0 \
	$(BIN)/jupyter nbconvert --execute --ExecutePreprocessor.kernel_name=$(KERNEL) \
	--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.record_timing=False \
	--ExecutePreprocessor.store_widget_state=False

run: $(STAMP)  ## execute every notebook headless; HTML to build/; then name any that failed
	@failed=; for nb in $(NOTEBOOKS); do $(EXECUTE) --to html --output-dir build $$nb || failed="$$failed $$nb"; done; \
	if [ -n "$$failed" ]; then echo "make run: failed:$$failed"; exit 1; fi

# The .py twins are the source (a new twin gets its .ipynb here). `jupytext --sync` takes the
# inputs from whichever file of a pair is newer and keeps the cell ids (no noisy diffs).
# One notebook: make regen TWINS=py_src/01_tensors_and_strides.py
TWINS := $(LESSONS:%=py_src/%.py)
regen: export  ## export lesson code, re-execute notebooks in place (new goldens), alt text on each figure, re-sync the .py twins, then make i18n zh
	$(BIN)/jupytext --sync --quiet $(TWINS)
	$(EXECUTE) --to notebook --inplace $(TWINS:py_src/%.py=notebooks/%.ipynb)
	$(BIN)/python scripts/figure_alt.py $(TWINS:py_src/%.py=notebooks/%.ipynb)
	$(BIN)/jupytext --sync --quiet $(TWINS)
	$(I18N) extract
	$(I18N) build $(TWINS:py_src/%.py=%)
	$(EXECUTE) --to notebook --inplace $(TWINS:py_src/%.py=notebooks/zh/%.ipynb)

# The Chinese edition (CONTRIBUTING.md, "Translations"): locale/zh_CN/LC_MESSAGES/NN_topic.po holds
# the Chinese of each markdown cell (gettext, polib); notebooks/zh/ is generated from the English
# notebooks and those catalogs, never edited. A fuzzy or untranslated entry leaves its cell in
# English (as msgfmt leaves fuzzy entries out), so make regen never stops on a translation;
# make test fails, naming the cell, until it is translated (python scripts/i18n.py check).
I18N := $(BIN)/python scripts/i18n.py
i18n: $(STAMP)  ## update the Chinese catalogs from the English notebooks (changed cells go fuzzy)
	$(I18N) extract

zh: $(STAMP)  ## write notebooks/zh/ (the Chinese notebooks) from the English notebooks and the catalogs, and run them
	$(I18N) build
	$(EXECUTE) --to notebook --inplace $(ZH_NOTEBOOKS)

export: $(STAMP)  ## copy every `# @save` lesson cell into lecture_utils (the notebook is the source)
	$(BIN)/python scripts/export_lessons.py

lint: lint-workflows  ## actionlint over the CI workflow, then ruff over the Python (the notebooks through their .py twins)
	$(BIN)/ruff check conftest.py lecture_utils tests scripts benchmarks py_src

# The pinned shellcheck checks the workflow's run: scripts (not whichever one a machine has on
# PATH: GitHub's runners have one, these machines none); no python run: scripts, so no pyflakes.
# tests/test_workflow.py plants an error in a copy (make lint-workflows WORKFLOWS=copy.yml).
WORKFLOWS := $(wildcard .github/workflows/*.yml .github/workflows/*.yaml)
lint-workflows: $(STAMP)  ## actionlint over .github/workflows/ (the first half of make lint)
	$(BIN)/actionlint -shellcheck=$(BIN)/shellcheck -pyflakes= $(WORKFLOWS)

wheel: $(STAMP)  ## dist/pytorch_resource_accounting-*.whl: the package and its data, for Colab and hosted Jupyter
	$(BIN)/python -m pip wheel --quiet --no-deps --no-build-isolation . -w dist/
	@ls dist/*.whl

bench: $(STAMP)  ## speed benchmarks (by hand; not part of make test)
	@for b in benchmarks/[a-z]*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# mutmut mutates the lesson's calculators and measurers ([tool.mutmut] in pyproject.toml), make test's unit
# tests and then the notebooks (nbval) try to kill each mutant, and hand-planted errors must fail a notebook.
# An hour or more on 2 cores; the last run's record is docs/mutation.md.
mutation: $(STAMP)  ## mutation testing: do the checks catch wrong code? (by hand; report in build/mutation/)
	$(BIN)/python scripts/mutation.py

site: $(STAMP)  ## static site from the stored outputs (no execution) in build/site/
	$(BIN)/python scripts/build_site.py --out build/site $(NOTEBOOKS)

slides: $(STAMP)  ## one reveal.js deck per notebook in build/slides/
	$(BIN)/python scripts/build_slides.py --out build/slides $(NOTEBOOKS)

# Without Chromium the browser tests would only skip: stop here instead (exit 2, one line).
site-check: site slides  ## the browser tests: page checks on broken pages, Lab in Chromium, every real page and deck
	@command -v chromium >/dev/null || { echo "chromium not found: apt-get update && apt-get install -y chromium (Debian/Ubuntu), then rerun"; exit 2; }
	$(XDIST_ENV) $(BIN)/python -m pytest tests -m site -n auto $(XDIST_DIST)

data: $(STAMP)  ## train the tokenizer and write data/tokens/ (reproducible: same sha256)
	$(BIN)/python -m lecture_utils.data prepare

corpus:  ## re-extract data/corpus/ from Debian's dict-jargon and dict-devil (needs root)
	apt-get install -y dict-jargon dict-devil
	$(PYTHON) scripts/extract_corpus.py

# The GPU check needs only a python3 with torch (no venv, no Jupyter): see docs/gpu/README.md.
GPU_PYTHON ?= python3
gpu-check:  ## on a CUDA machine: every notebook's .py and the benchmarks; report in build/gpu-check/
	$(GPU_PYTHON) scripts/gpu_check.py --out build/gpu-check

gpu-rehearsal: $(STAMP)  ## the same stages on this CPU, as on the lent GPU machine; report in build/gpu-rehearsal/
	$(BIN)/python scripts/gpu_check.py --device cpu --out build/gpu-rehearsal

clean:  ## remove build outputs (keeps .venv)
	rm -rf build dist mutants .pytest_cache .ruff_cache
