# MJBlend developer entry point. `make test` works on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
GUI_STAMP := $(VENV)/.gui-installed

.PHONY: venv gui-deps demo test build lint schema clean

venv: $(STAMP)

$(STAMP): requirements-dev.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; MJBlend needs Python 3.11 (Blender's Python)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -r requirements-dev.txt
	touch $(STAMP)

# Debian's blender + Xvfb + xdotool, and mujoco for that Blender's Python.
gui-deps: $(GUI_STAMP)

$(GUI_STAMP): $(STAMP) tools/install_gui_deps.sh
	tools/install_gui_deps.sh
	touch $(GUI_STAMP)

# The main job: import a model, simulate it, save demo.blend, render demo.png.
demo: $(STAMP)
	$(PY) tools/demo.py

# The whole suite: tests/pytest.ini holds the options.
test: $(STAMP) $(GUI_STAMP)
	$(PY) -m pytest -c tests/pytest.ini tests

# Installable zips, one per platform, each bundling the mujoco-core wheel.
build: $(STAMP)
	$(PY) tools/build_extension.py

# Style and obvious bugs (config in pyproject.toml); the schema must be current.
lint: $(STAMP)
	$(PY) -m pip install --quiet -r requirements-lint.txt
	$(VENV)/bin/ruff check .
	$(PY) tools/gen_schema.py --check

# Regenerate components/schema_table.py from the installed mujoco.
schema: $(STAMP)
	$(PY) tools/gen_schema.py

clean:
	rm -rf dist wheels .pytest_cache demo.blend demo.png
