# The two commands: `make demo` and `make test`; `make lab` for the notebooks and `make docs` for the documentation site.
# Each creates .venv when missing.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

# The suite on two workers at most (one on a single core): worksteal hands each a run of neighbouring tests (a module's
# fixtures are made once) and moves work to whichever is idle; a notebook's cells stay on one worker (loadscope).
XDIST  := -n auto --maxprocesses 2

.PHONY: demo test test-slow test-real lab lint docs screenshot clean

# Each target is one pip run over the package and its extra (a fresh clone's `make test` resolves once, not twice).
# pip is upgraded first: the venv's own (23.2 with Python 3.11.7) took twice the wall time over the same install.
$(VENV)/.base: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.test: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.base

$(VENV)/.notebook: $(VENV)/.base
	$(PY) -m pip install --quiet -e '.[notebook]'
	touch $@

$(VENV)/.docs: $(VENV)/.base
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $@

demo: $(VENV)/.base
	$(VENV)/bin/gradebench demo

lab: $(VENV)/.notebook  # JupyterLab on the notebooks (as root, e.g. in a container, it needs --allow-root)
	$(VENV)/bin/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

test: $(VENV)/.test  # the statistical simulations as fast slices; their full size is `make test-slow`
	$(PY) -m pytest -q -m "not slow and not real" $(XDIST) --dist worksteal
	@if ls notebooks/*.ipynb >/dev/null 2>&1; then $(PY) -m pytest -q $(XDIST) --dist loadscope --nbval-lax notebooks/; fi

test-slow: $(VENV)/.test  # the statistical simulations at full size (marked slow)
	$(PY) -m pytest -q -m slow $(XDIST) --dist worksteal

test-real: $(VENV)/.test  # real models on llama.cpp: builds llama-server once into ~/.cache/gradebench-real (see scripts/)
	$(PY) scripts/real_models.py prepare || test $$? -eq 3  # 3: no compiler or registry here; the tests skip, saying so
	$(PY) -m pytest -q -rs -m real tests/real

lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy gradebench
	$(VENV)/bin/lint-imports

docs: $(VENV)/.docs  # the documentation site, built offline into site/ (open site/index.html); --strict: a broken link fails
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -d site

screenshot: $(VENV)/.test  # the browser test, writing the panel's screenshot to docs/panel.png for the README
	GRADEBENCH_SCREENSHOT=1 $(PY) -m pytest -q tests/leaves/test_browser.py

clean:
	rm -rf $(VENV) .gradebench out site
