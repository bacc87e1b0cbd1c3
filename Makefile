# The two commands: `make demo` and `make test`. Each creates .venv when it is missing.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: demo test lint clean

$(VENV)/.base: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.base
	$(VENV)/bin/gradebench demo

test: $(VENV)/.test
	$(PY) -m pytest -q
	@if ls notebooks/*.ipynb >/dev/null 2>&1; then $(PY) -m pytest -q --nbval-lax notebooks/; fi

lint: $(VENV)/.test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy gradebench

clean:
	rm -rf $(VENV) .gradebench out
