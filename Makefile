# Two commands do all setup on a fresh machine with Python 3.11+:
#   make report   builds every report from the bundled data into reports/
#   make test     runs the whole test suite (what CI runs, through .ci/run)
# Both create .venv/ in the repository root and install the project into it.
# For contributors: make check (ruff, import-linter and the tests that need no service, Spark, training framework or
# notebook run; a few minutes) and make docs (the manual, into site/). CONTRIBUTING.md says what each tier holds.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
FRAMEWORKS := $(VENV)/.frameworks-stamp

# Python writes its bytecode caches (__pycache__/, ignored by git) even where the environment turns them off: else each
# `ett` process a test starts compiles the package again, and each pytest process rewrites every test module's asserts.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup frameworks lint check test docs report bench lab live-job framework-run slurm-fleet slurm-multinode slurm-restarts slurm-slow clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $(STAMP)

setup: $(STAMP)

# The training frameworks the integration tests run for real (PyTorch CPU build, Lightning, Hugging Face).
# torch==2.13.0+cpu only installs the CPU wheel the machine ships; where it is missing, the install is skipped
# (never the multi-GB CUDA build) and those tests skip themselves, naming the missing package.
$(FRAMEWORKS): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,lightning,hf]' 'torch==2.13.0+cpu' \
	  || echo "note: the framework extras could not be installed; the Lightning, Hugging Face and torchrun tests will be skipped"
	touch $(FRAMEWORKS)

frameworks: $(FRAMEWORKS)

# The notebooks execute once: nbval runs each committed notebook and compares every cell's output with the committed
# one (strict, sanitised), keeping what it executed in $(EXECUTED) (notebooks/conftest.py); tests/test_notebooks.py
# then holds those copies byte for byte to the committed ones and their scorecards to the paper, without running the
# notebooks again. Both runs always run; make test fails if either failed.
# The Spark tests run in one process of their own beside the others (one JVM, one application on the project's
# cluster: two would starve each other of its memory); their output is printed at the end. The others run on one
# pytest-xdist worker more than the machine has cores: the Slurm, monitoring and live-job tests spend minutes waiting
# on real services and jobs, and the Spark process mostly runs on one core, so a worker waiting leaves a core free.
# The long tests start first (tests/conftest.py). --durations lists where the time went.
EXECUTED := $(CURDIR)/.executed-notebooks
SPARK_LOG := $(CURDIR)/.spark-tests.log
test: setup frameworks lint docs
	rm -rf $(EXECUTED)
	t=$$(date +%s); \
	ETT_EXECUTED_NOTEBOOKS=$(EXECUTED) $(BIN)/python -m pytest -n auto --dist loadscope -q --nbval --nbval-current-env \
	  notebooks/; nb=$$?; echo "notebooks (nbval) ran in $$(( $$(date +%s) - t )) s"; t=$$(date +%s); \
	$(BIN)/python -m pytest -p no:xdist -q -m spark --durations=15 > $(SPARK_LOG) 2>&1 & sp=$$!; \
	ETT_EXECUTED_NOTEBOOKS=$(EXECUTED) $(BIN)/python -m pytest -n $$(( $$(nproc) + 1 )) --dist loadgroup -q \
	  --durations=25 -m "not spark"; \
	rc=$$?; echo "tests but Spark's (pytest) ran in $$(( $$(date +%s) - t )) s"; wait $$sp; src=$$?; cat $(SPARK_LOG); \
	echo "Spark tests (pytest, one process beside them) ran in $$(( $$(date +%s) - t )) s"; \
	test $$nb -eq 0 && test $$rc -eq 0 && test $$src -eq 0

# The quick loop: the style, the architecture and every test no tier below marks (tests/conftest.py, pyproject.toml).
# The property tests scaled by ETT_PROPERTY_EXAMPLES (tests/test_metric_properties.py) run a tenth of their examples;
# make test runs them all.  One pytest-xdist worker more than the machine has cores: some tests wait on the `ett` processes they
# start, and a worker waiting leaves its core to the others.
QUICK := not (spark or service or framework or notebook or fuzz or slow)
check: lint
	ETT_PROPERTY_EXAMPLES=0.1 $(BIN)/python -m pytest -n $$(( $$(nproc) + 1 )) --dist loadgroup -q -m "$(QUICK)"

# The manual (mkdocs.yml), offline, into site/; --strict: a broken link, a missing page or a bad reference fails it.
# The two variables silence a notice a plugin prints about MkDocs' future (it asks for the network to read more).
docs: setup
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --site-dir site

# The layout and the style: ruff (lint and format, pyproject.toml) and import-linter's contracts (the architecture)
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

report: setup
	$(BIN)/ett report

bench: setup
	$(BIN)/python benchmarks/run.py $(ARGS)

live-job: setup
	$(BIN)/python -m pip install --quiet -e '.[torch]' 'torch==2.13.0+cpu'
	$(BIN)/python -m tools.campaigns.live_job

framework-run: setup frameworks
	$(BIN)/python -m tools.campaigns.framework_run

# The real Slurm campaign (data/slurm-fleet): a fresh cluster of its own (tools/slurm, on free ports it picks), about
# half an hour on 2 cores.
SLURM_FLEET_STATE ?= $(or $(TMPDIR),/tmp)/ett-slurm-fleet
SLURM_FLEET_ENV   := ETT_SLURM_DIR=$(SLURM_FLEET_STATE)
slurm-fleet: setup frameworks
	$(SLURM_FLEET_ENV) tools/slurm/start.sh --fresh
	$(SLURM_FLEET_ENV) SLURM_CONF="$$($(SLURM_FLEET_ENV) tools/slurm/start.sh --conf)" $(BIN)/python -m tools.campaigns.slurm_fleet \
	  --work $(SLURM_FLEET_STATE)-work; rc=$$?; $(SLURM_FLEET_ENV) tools/slurm/stop.sh; exit $$rc

# The real multi-node campaign (data/slurm-multinode): a fresh cluster of three slurmd daemons on this machine
# (ETT_SLURM_NODES=3, free ports), seven sleep jobs, node3 failing once; about two minutes. No PyTorch needed.
SLURM_MULTINODE_STATE ?= $(or $(TMPDIR),/tmp)/ett-slurm-multinode
SLURM_MULTINODE_ENV   := ETT_SLURM_DIR=$(SLURM_MULTINODE_STATE) ETT_SLURM_NODES=3
slurm-multinode: setup
	$(SLURM_MULTINODE_ENV) tools/slurm/start.sh --fresh
	$(SLURM_MULTINODE_ENV) SLURM_CONF="$$($(SLURM_MULTINODE_ENV) tools/slurm/start.sh --conf)" $(BIN)/python -m tools.campaigns.slurm_multinode \
	  --work $(SLURM_MULTINODE_STATE)-work; rc=$$?; $(SLURM_MULTINODE_ENV) tools/slurm/stop.sh; exit $$rc

# The real restart campaign (data/slurm-restarts): a fresh 3-node cluster of its own, a crash loop, a job that fails
# but advances, and a storm of two nodes going down under six jobs; about two minutes. No PyTorch needed.
SLURM_RESTARTS_STATE ?= $(or $(TMPDIR),/tmp)/ett-slurm-restarts
SLURM_RESTARTS_ENV   := ETT_SLURM_DIR=$(SLURM_RESTARTS_STATE) ETT_SLURM_NODES=3
slurm-restarts: setup
	$(SLURM_RESTARTS_ENV) tools/slurm/start.sh --fresh
	$(SLURM_RESTARTS_ENV) SLURM_CONF="$$($(SLURM_RESTARTS_ENV) tools/slurm/start.sh --conf)" $(BIN)/python -m tools.campaigns.slurm_restarts \
	  --work $(SLURM_RESTARTS_STATE)-work; rc=$$?; $(SLURM_RESTARTS_ENV) tools/slurm/stop.sh; exit $$rc

# The real slowed-node campaign (data/slurm-slow): a fresh 3-node cluster of its own, twelve 2-rank DDP training jobs
# (torchrun, gloo on CPU) in four waves, every job on node2 with one rank sleeping; about four minutes. Needs PyTorch.
SLURM_SLOW_STATE ?= $(or $(TMPDIR),/tmp)/ett-slurm-slow
SLURM_SLOW_ENV   := ETT_SLURM_DIR=$(SLURM_SLOW_STATE) ETT_SLURM_NODES=3
slurm-slow: setup frameworks
	$(SLURM_SLOW_ENV) tools/slurm/start.sh --fresh
	$(SLURM_SLOW_ENV) SLURM_CONF="$$($(SLURM_SLOW_ENV) tools/slurm/start.sh --conf)" $(BIN)/python -m tools.campaigns.slurm_slow \
	  --work $(SLURM_SLOW_STATE)-work; rc=$$?; $(SLURM_SLOW_ENV) tools/slurm/stop.sh; exit $$rc

lab: setup
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf $(VENV) reports/* .pytest_cache .hypothesis site .executed-notebooks .spark-tests.log
	touch reports/.gitkeep
