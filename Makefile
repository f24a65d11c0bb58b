# MJBlend developer entry point. `make test` works on a fresh machine.
#
# Environments: one per Blender release the suite runs on, each made by
# tools/make_venv.sh (that release's bpy module and requirements-dev.txt): bpy 4.2 -
# 5.0 on this machine's Python 3.11, bpy 5.1+ on Python 3.13 inside a Debian sid
# root (tools/debian_root.sh, which also holds Debian's Blender 5.2 LTS for the GUI
# tier). .venv holds the default release and is the one demo, bench, build and lint use.
PYTHON ?= python3.11
# Every Blender line the manifest supports: 4.2 LTS, 4.5 LTS, 5.0 (Python 3.11), 5.1 and
# 5.2 LTS (Python 3.13): the newest of each on PyPI.
BLENDERS ?= 4.2.23 4.5.15 5.0.1 5.1.2 5.2.3
BLENDER_DEFAULT := 5.0.1
# The environment that drives the GUI tier (one of the root's: the GUI tier runs there).
BLENDER_GUI := 5.2.3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: venv root demo test test-bpy test-gui test-fuzz build lint schema clean mujoco-uni-env

venv:
	PYTHON=$(PYTHON) tools/make_venv.sh $(BLENDER_DEFAULT) $(VENV)

# The Debian sid root: Python 3.13, Debian's blender 5.2 LTS, Xvfb, xdotool (needs root).
root:
	tools/debian_root.sh

# The main job: import a model, simulate it, render demo.png, bake 3 s and render
# demo.mp4, save demo.blend (with the bake).
demo: venv
	$(PY) tools/demo.py

# The whole suite: the bpy tiers on every Blender in BLENDERS (each in its own
# environment, made on first use), then the GUI tier once (Debian's Blender 5.2 under
# Xvfb in the root, MJBlend installed from the linux zip), then the fuzz tier once
# (default release). Quick local work: `make test-bpy
# BLENDERS=4.5.15` (one release, no GUI tier), `make test-gui` or `make test-fuzz`.
# tests/pytest.ini holds the options.
test: venv root
	@status=0; PYTHON=$(PYTHON) tools/run_tests.sh --default $(BLENDER_DEFAULT) --gui $(BLENDER_GUI) $(BLENDERS) || status=$$?; \
	$(FUZZ) || status=1; exit $$status

test-bpy: venv
	@PYTHON=$(PYTHON) tools/run_tests.sh --default $(BLENDER_DEFAULT) $(BLENDERS)

test-gui: venv root
	@PYTHON=$(PYTHON) tools/run_tests.sh --default $(BLENDER_DEFAULT) --gui $(BLENDER_GUI)

# The fuzz tier (tests/fuzz, issue 16), once, on the default release: a few hundred
# hostile files made from the corpus, each loaded by MuJoCo and imported in capped
# child processes. MJBLEND_FUZZ_SEED picks other files.
FUZZ = echo "== fuzz tier: bpy $(BLENDER_DEFAULT) ($(VENV))"; $(PY) -m pytest -c tests/pytest.ini tests/fuzz
test-fuzz: venv
	@$(FUZZ)

# MuJoCoUni (mujoco-uni-runtime 0.5.0 on MuJoCo 3.11) in its own environment, for
# bench/batch_bench.py's side-by-side figures; the bench says when it is missing.
mujoco-uni-env:
	PYTHON=$(PYTHON) tools/make_mujoco_uni_env.sh .venv-mujoco-uni

# Installable zips, one per platform, each bundling the mujoco-core, pyzmq, msgpack, PyOpenGL and glfw wheels.
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
	rm -rf dist wheels build .pytest_cache demo.blend demo.png demo.mp4
