# Two commands do all setup on a fresh machine with Python 3.11+:
#   make report   builds every report from the bundled data into reports/
#   make test     runs the whole test suite
# Both create .venv/ in the repository root and install the project into it.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
FRAMEWORKS := $(VENV)/.frameworks-stamp

.PHONY: setup frameworks lint test report bench lab live-job framework-run slurm-fleet slurm-multinode clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
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

test: setup frameworks lint
	$(BIN)/python -m pytest -n auto --dist loadgroup -q --durations=12
	$(BIN)/python -m pytest -n auto --dist loadscope -q --nbval --nbval-current-env notebooks/

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

lab: setup
	$(BIN)/jupyter lab notebooks/

clean:
	rm -rf $(VENV) reports/* .pytest_cache .hypothesis
	touch reports/.gitkeep
