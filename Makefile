# MJBlend developer entry point. `make test` works on a fresh machine.
#
# Environments: one per Blender release the suite runs on, each made by
# tools/make_venv.sh (Python 3.11, that release's bpy module, requirements-dev.txt).
# .venv holds the default release and is the one demo, bench, build and lint use.
PYTHON ?= python3.11
# Every Blender line the manifest supports: 4.2 LTS, 4.5 LTS, 5.0 (newest of each on PyPI).
BLENDERS ?= 4.2.23 4.5.15 5.0.1
BLENDER_DEFAULT := 5.0.1
VENV := .venv
PY := $(VENV)/bin/python
GUI_STAMP := $(VENV)/.gui-installed

.PHONY: venv gui-deps demo test test-bpy test-gui test-fuzz build lint schema clean

venv:
	PYTHON=$(PYTHON) tools/make_venv.sh $(BLENDER_DEFAULT) $(VENV)

# Debian's blender + Xvfb + xdotool, and mujoco for that Blender's Python.
gui-deps: venv
	@test -f $(GUI_STAMP) -a $(GUI_STAMP) -nt requirements-dev.txt -a $(GUI_STAMP) -nt tools/install_gui_deps.sh \
		|| { tools/install_gui_deps.sh && touch $(GUI_STAMP); }

# The main job: import a model, simulate it, render demo.png, bake 3 s and render
# demo.mp4, save demo.blend (with the bake).
demo: venv
	$(PY) tools/demo.py

# The whole suite: the bpy tiers on every Blender in BLENDERS (each in its own
# environment, made on first use), then the GUI tier once (Debian's Blender under
# Xvfb), then the fuzz tier once (default release). Quick local work: `make test-bpy
# BLENDERS=4.5.15` (one release, no GUI tier), `make test-gui` or `make test-fuzz`.
# tests/pytest.ini holds the options.
test: gui-deps
	@status=0; PYTHON=$(PYTHON) tools/run_tests.sh --default $(BLENDER_DEFAULT) --gui $(BLENDERS) || status=$$?; \
	$(FUZZ) || status=1; exit $$status

test-bpy: venv
	@PYTHON=$(PYTHON) tools/run_tests.sh --default $(BLENDER_DEFAULT) $(BLENDERS)

test-gui: gui-deps
	@PYTHON=$(PYTHON) tools/run_tests.sh --default $(BLENDER_DEFAULT) --gui

# The fuzz tier (tests/fuzz, issue 16), once, on the default release: a few hundred
# hostile files made from the corpus, each loaded by MuJoCo and imported in capped
# child processes. MJBLEND_FUZZ_SEED picks other files.
FUZZ = echo "== fuzz tier: bpy $(BLENDER_DEFAULT) ($(VENV))"; $(PY) -m pytest -c tests/pytest.ini tests/fuzz
test-fuzz: venv
	@$(FUZZ)

# Installable zips, one per platform, each bundling the mujoco-core, pyzmq and msgpack wheels.
build: venv
	$(PY) tools/build_extension.py

# Style and obvious bugs (config in pyproject.toml); the schema must be current.
lint: venv
	$(PY) -m pip install --quiet -r requirements-lint.txt
	$(VENV)/bin/ruff check .
	$(PY) tools/gen_schema.py --check

# Regenerate components/schema_table.py from the installed mujoco.
schema: venv
	$(PY) tools/gen_schema.py

clean:
	rm -rf dist wheels .pytest_cache demo.blend demo.png demo.mp4
