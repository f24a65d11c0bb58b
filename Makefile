# MJBlend developer entry point. `make test` works on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv test build lint schema clean

venv: $(STAMP)

$(STAMP): requirements-dev.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; MJBlend needs Python 3.11 (Blender's Python)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -r requirements-dev.txt
	touch $(STAMP)

# The whole suite: tests/pytest.ini holds the options.
test: $(STAMP)
	$(PY) -m pytest -c tests/pytest.ini tests

# Installable zips, one per platform, each bundling the mujoco-core wheel.
build: $(STAMP)
	$(PY) tools/build_extension.py

# Regenerate components/schema_table.py from the installed mujoco.
schema: $(STAMP)
	$(PY) tools/gen_schema.py

clean:
	rm -rf dist wheels .pytest_cache
