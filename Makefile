# kit: `make demo` trains the reference job on this machine; `make test` runs the test suite.
# Both create the virtualenv on first use. On this CPU machine torch is pinned to the CPU build on disk
# (constraints.txt); GPU users install with `pip install -e .[test]` into their own CUDA environment (the extra test
# pulls in train, the reference job's own packages).

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kit-installed
KIT_PATH := $(abspath $(VENV))/kit-path

.PHONY: venv demo test test-fast lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	# compat: kit goes on sys.path through a plain .pth line. The default editable finder costs every Python start
	# in the venv ~12 ms (kit's CLI, the nodes, the tests' hosts): 22 -> 10 ms for `python -c pass`.
	$(PY) -m pip install -q -c constraints.txt -e '.[test]' --config-settings editable_mode=compat
	# compat's line names the checkout, which would make train/, tests/, bench/ and tools/ importable from any
	# directory (a user's own `train` package found kit's: issue 36). It names instead $(KIT_PATH), which holds
	# links to kit's own packages only (a module added to them is seen without reinstalling). The nodes run
	# `python -m train` from their workdir, the checkout (tests/kit/test_kit_import.py).
	rm -rf $(KIT_PATH) && mkdir -p $(KIT_PATH) && ln -s $(CURDIR)/launcher $(CURDIR)/kit $(KIT_PATH)/
	$(PY) -c 'import glob, sys, sysconfig; [pth] = glob.glob(sysconfig.get_path("purelib") + "/__editable__.kit_launcher-*.pth"); open(pth, "w").write(sys.argv[1] + "\n")' $(KIT_PATH)
	touch $(STAMP)

# The demo trains from scratch each time (`-- --resume no` replaces outputs/bert_cls), so it can be run again.
demo: venv
	$(VENV)/bin/kit submit jobs/bert_cls.yaml -- --resume no
	@echo "make demo: kit is installed in $(VENV)/bin; run 'source $(VENV)/bin/activate' to have it on PATH"

test: venv
	$(PY) -m pytest -q -p no:cacheprovider --durations=25

# The edit-test loop: no test cluster (SSH and SLURM hosts: tests marked `harness`, tests/conftest.py) and no long
# training runs (marked `slow`); a few minutes here. `make test` still runs everything.
test-fast: venv
	$(PY) -m pytest -q -p no:cacheprovider -m "not harness and not slow"

# ruff (format and check) on launcher/, train/, bench/, tools/ and kit/, mypy on launcher/ (pyproject.toml);
# .ci/run runs this first. `ruff format launcher train bench tools kit` fixes what the format check refuses.
lint: venv
	$(VENV)/bin/ruff format --check launcher train bench tools kit
	$(VENV)/bin/ruff check launcher train bench tools kit
	$(VENV)/bin/mypy

# Every benchmark runs; any missed target (a non-zero exit) fails the target at the end.
bench: venv
	status=0; for b in cli_latency train_overhead local_threads ssh_fanout slurm_submit restart launchers memory env_check insight_overhead; do $(PY) bench/$$b.py || status=1; done; exit $$status

clean:
	rm -rf runs outputs .pytest_cache
