# hybridgpu: one command sets up and runs the main job, one sets up and runs the tests.
#   make preview   offline preview of every example stack (no cloud account, no Pulumi CLI):
#                  installs the package in .venv/ and nothing else (no apt, no npm)
#   make test      the test suite (CI runs this through .ci/run): installs the test tools first
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: venv setup shellcheck preview test fuzz check bench clean

# What `make preview` (and every hybridgpu command) needs: the package and its dependencies.
venv: $(VENV)/.installed

# What `make test` needs on top: the test extras, the Karpenter schema package, checkov, shellcheck, promtool.
setup: $(VENV)/.installed-test tools/schemas/node_modules/.installed shellcheck .venv-tools/.installed .venv-tools/bin/promtool

# shellcheck lints the generated bootstrap scripts in the tests (Debian package).
shellcheck:
	@command -v shellcheck >/dev/null 2>&1 || { \
	  echo "make test: installing shellcheck (apt-get): the tests lint the generated bootstrap scripts with it"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null; \
	  else echo "shellcheck missing: install it (apt-get install shellcheck); its tests will be skipped"; fi; }

$(VENV)/.installed: pyproject.toml
	@echo "installing hybridgpu in $(VENV)/ (pip install -e .): what every hybridgpu command needs"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	@echo "make test: installing the test extras (pip install -e '.[test]'): pytest, hypothesis, mypy, import-linter, matplotlib for the plot tests"
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# checkov (Kubernetes manifest checks in tests/security) in its own venv: its pinned
# dependencies must not meet the project's.
.venv-tools/.installed: tools/security/requirements.txt
	@echo "make test: installing checkov in .venv-tools/ (pip): tests/security checks the rendered Kubernetes manifests with it"
	$(PYTHON) -m venv .venv-tools
	.venv-tools/bin/pip install --quiet --upgrade pip
	.venv-tools/bin/pip install --quiet -r tools/security/requirements.txt
	touch $@

# promtool evaluates the idle-GPU PrometheusRule in tests/render/test_idle_alert.py. It comes from
# Debian's prometheus package; only the promtool binary is extracted (no daemon is installed).
.venv-tools/bin/promtool: | .venv-tools/.installed
	@echo "make test: extracting promtool from Debian's prometheus package (apt-get download): the tests evaluate the idle-GPU alert rule with it"
	rm -rf .venv-tools/deb && mkdir -p .venv-tools/deb
	cd .venv-tools/deb && { [ "$$(id -u)" != 0 ] || apt-get update -qq; } && apt-get download -qq prometheus 2>/dev/null \
	  && dpkg-deb -x prometheus_*.deb root && cp root/usr/bin/promtool ../bin/promtool
	rm -rf .venv-tools/deb

tools/schemas/node_modules/.installed: tools/schemas/package.json tools/schemas/package-lock.json
	@echo "make test: installing the pinned Karpenter schema package (npm ci --prefix tools/schemas): the tests and \`hybridgpu job check\` validate manifests against its CRDs"
	npm ci --prefix tools/schemas --no-audit --no-fund --loglevel=error
	touch $@

preview: venv
	$(BIN)/hybridgpu preview

# The import contracts first (pyproject.toml [tool.importlinter], docs/architecture.md): a layer
# violation fails in a second, before the suite runs (tests/test_layers.py checks them too).
# Then the type checker over hybridgpu/ (pyproject.toml [tool.mypy]).
# The suite on every core (pytest-xdist); --dist loadfile keeps a test file on one worker, so its
# module fixtures (the policy pack built and installed once, the fresh imports) run once.
# The tests write bytecode even where the environment says not to (PYTHONDONTWRITEBYTECODE): many
# tests start a Python process that imports hybridgpu, and each would compile its ~200 modules
# again; pytest's rewritten test modules are cached the same way (collection: 10.5 s -> 4.8 s).
TEST_ENV := env -u PYTHONDONTWRITEBYTECODE

test: setup
	$(BIN)/lint-imports --no-cache --no-logo
	$(BIN)/mypy
	$(TEST_ENV) HYBRIDGPU_REQUIRE_TOOLS=1 $(BIN)/python -m pytest -q -n auto --dist loadfile

# The large fuzz run (>= 10,000 malformed inputs over every loader and CLI entry point), and every
# property test with its full number of examples (tests/helpers `examples`); `make test` runs a sample.
fuzz: setup
	$(TEST_ENV) HYBRIDGPU_FUZZ=full $(BIN)/python -m pytest -q tests/security/test_sec_fuzz.py
	$(TEST_ENV) HYBRIDGPU_FUZZ=full $(BIN)/python -m pytest -q -n auto $$(grep -rl --include='test_*.py' 'examples(' tests)

# The policy pack on every stack, offline (docs/policies.md); exit 1 on a mandatory violation.
check: setup
	$(BIN)/hybridgpu check --policy-pack-config policies/config.example.json

bench: setup
	$(BIN)/python benchmarks/preview_bench.py --repeat 15

clean:
	rm -rf out .pytest_cache
