# Set-up and entry points. `make test` and `make demo` work on a fresh machine:
# they create .venv, install PyTorch (the CPU wheel torch==2.13.0 when no CUDA GPU is
# present; a CUDA machine keeps or installs its own build), then the package.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: install test test-debug demo demo-moving demo-curobo bench fuzz soak lint clean browser

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip >/dev/null
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
		echo "CUDA GPU found: installing the default (CUDA) torch build"; \
		$(PY) -c "import torch" 2>/dev/null || $(PIP) install torch; \
	else \
		echo "No CUDA GPU: installing the CPU wheel torch==2.13.0"; \
		$(PIP) install torch==2.13.0; \
	fi
	$(PIP) install -e ".[dev]"
	touch $@

install: $(VENV)/.installed

# the suite in parallel worker processes (pytest-xdist, one per core); TEST_WORKERS=0: one process
TEST_WORKERS ?= auto
test: install
	$(PY) -m pytest -n $(TEST_WORKERS)

# the suite with every Warp kernel bounds-checked (Warp's debug mode, its own kernel cache):
# an out-of-bounds index aborts naming the kernel's line instead of corrupting memory; slower
test-debug: install
	CUROBO_LITE_WARP_DEBUG=1 $(PY) -m pytest -m "not slow"

# the bundled defaults: MPC drives the Franka to a reachable pose; the plot lands in out/
DEMO_ARGS ?= mpc --robot franka --goal 0.45 0.2 0.45 0 1 0 0 --steps 250 --plot out/mpc_demo.png

demo: install
	@mkdir -p out
	$(VENV)/bin/curobo-lite $(DEMO_ARGS)

# cuRobo's quick start, ported by renaming its imports: motion generation above a table on a
# robot file in cuRobo's layout (examples/curobo/; docs/coming_from_curobo.md)
demo-curobo: install
	$(PY) examples/curobo/motion_gen_example.py

# Reactive control among obstacles: MotionGen plans, MPC tracks the plan; a post is moved onto the
# rest of the plan at step 10, the plan is found blocked, replanned, and the arm goes around it
demo-moving: install
	@mkdir -p out
	$(VENV)/bin/curobo-lite mpc --follow --robot franka --world moving_post \
		--goal 0.4 -0.3 0.45 0 1 0 0 --move post 10 0.42 -0.08 0.33 --steps 250 \
		--plot out/mpc_moving.png

bench: install
	$(PIP) install -e ".[bench]"
	$(PY) benchmarks/step_kernels.py
	$(PY) benchmarks/kinematics.py
	$(PY) benchmarks/rollout.py
	$(PY) benchmarks/mpc.py
	$(PY) benchmarks/reactive.py
	$(PY) benchmarks/trajopt.py
	$(PY) benchmarks/collision.py
	$(PY) benchmarks/self_collision.py
	$(PY) benchmarks/profile_stages.py
	$(PY) benchmarks/closed_loop_mujoco.py
	$(PY) benchmarks/dataset.py

# >= 10 000 hostile inputs per public entry point (tests/fuzz_targets.py); counts per outcome
FUZZ_CASES ?= 10000
fuzz: install
	@mkdir -p out
	$(PY) tools/fuzz.py --cases $(FUZZ_CASES) --json out/fuzz.json

# 10 000 MPC steps with changing goals and obstacles: memory, step-time drift, NaN commands
soak: install
	@mkdir -p out
	$(PY) benchmarks/soak.py --steps 10000 --json out/soak.json

# Debian's Chromium and its WebDriver, for the viewer's browser test (tests/test_viz.py skips
# without them); apt-get needs root, so non-root users go through sudo
SUDO ?= $(shell [ "$$(id -u)" = 0 ] || echo sudo)

browser:
	$(SUDO) apt-get update
	$(SUDO) apt-get install -y --no-install-recommends chromium chromium-driver

lint: install
	$(VENV)/bin/ruff check curobo_lite tests benchmarks tools

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
