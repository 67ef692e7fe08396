# wattsched — two commands: `make reproduce` and `make test` (and `make docs`: the documentation site).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SCALE ?= quick
OUT ?= results
WORKERS ?=
# More options of `wattsched reproduce`, e.g. ARGS="--only table3" or "--study-option table3.dqn_timesteps=30000"
ARGS ?=

.PHONY: venv test test-slow lint docs reproduce bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch==2.13.0 first: where its CPU wheel is installed it satisfies the [rl] extra's range, so pip never
# pulls a multi-GB CUDA build; elsewhere pip simply downloads it.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q "torch==2.13.0"
	$(BIN)/pip install -q -e ".[rl,ray,nvml,test,lint,docs]"
	touch $(STAMP)

venv: $(STAMP)

# The tests in TEST_WORKERS processes (pytest-xdist; auto: one per core, 0: in this process), each test file
# in one of them: the live Slurm tests spend most of their time waiting on real daemons, which the other
# files' work fills.
TEST_WORKERS ?= auto
test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile \
		--cov=wattsched --cov-report=term:skip-covered

test-slow: $(STAMP)
	HYPOTHESIS_PROFILE=slow $(BIN)/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks examples docs/hooks
	$(BIN)/mypy

# The site, offline (open site/index.html from disk); --strict: a broken link or reference fails the build.
# The reference pages are generated from the code during the build (docs/hooks/reference.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

reproduce: $(STAMP)
	$(BIN)/wattsched reproduce --scale $(SCALE) --out $(OUT) $(if $(WORKERS),--workers $(WORKERS),) $(ARGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) results site .pytest_cache .mypy_cache .ruff_cache
