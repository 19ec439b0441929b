# vyre: set-up and checks. Two commands work on a fresh Debian 12 machine:
#   make demo   install, then run the saxpy job on the default adapter (python -m vyre.demo)
#   make test   install (also Node.js and Dawn's Tint, and Chromium for the browser check), then run the
#               checks (ruff, mypy), the test suite (pytest, 2 workers) and build the documentation site
#               (mkdocs build --strict into site/)
#   make docs   install, then serve the documentation site locally (mkdocs serve)
# Python packages go into .venv from PyPI, Debian packages come from apt-get when the machine
# lacks them: nothing relies on packages installed by hand.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.vyre-installed
PYTEST_ARGS ?= -q
# pytest-xdist workers (CI machines have 2 cores); PYTEST_JOBS=0 runs the tests in this process.
PYTEST_JOBS ?= 2
# The Vulkan loader and mesa complain without a runtime directory (e.g. as root over ssh).
XDG_RUNTIME_DIR ?= /tmp
export XDG_RUNTIME_DIR

# The lavapipe Vulkan driver (CPU) and, through its dependencies, the Vulkan loader.
VULKAN_DEBS := mesa-vulkan-drivers
# ensurepip for `python3 -m venv` on Debian's python3.
VENV_DEBS   := python3-venv
# Node.js and npm for Dawn's Tint (npm package webgpu), the tests' second WGSL compiler.
NODE_DEBS   := nodejs npm
TINT_DIR    := tests/tint
TINT_STAMP  := $(TINT_DIR)/node_modules/.vyre-installed
# Chromium for the browser check (tests/export/test_browser.py): WebGPU on SwiftShader's Vulkan, on the CPU.
BROWSER_DEBS := chromium

# $(call apt_install,packages): apt-get as root, through sudo when not root, else say what to run.
apt_install = if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
	else echo "vyre: cannot install $(1): run as root: apt-get update && apt-get install -y $(1)" >&2; exit 1; fi; \
	echo "vyre: installing $(1) with apt-get"; \
	$$sudo apt-get update -q && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(1)

.PHONY: help install vulkan tint browser demo check test docs docs-build clean

help:
	@echo "make demo   - install, then run the saxpy demo on the default adapter"
	@echo "make check  - install, then run ruff and mypy (configured in pyproject.toml)"
	@echo "make test   - install (and Tint), then run the checks and the tests (PYTEST_ARGS=..., PYTEST_JOBS=2)"
	@echo "make docs   - install, then serve the documentation site on http://127.0.0.1:8000 (mkdocs serve)"
	@echo "make clean  - remove .venv and caches"

# The venv and the editable install with the test and docs extras; redone only when pyproject.toml changes.
$(STAMP): pyproject.toml
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { rm -rf $(VENV); $(call apt_install,$(VENV_DEBS)); \
		$(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,docs,distributed]'
	@touch $@

# wgpu needs a Vulkan driver (ICD) and loader. lavapipe runs on the CPU: every machine gets an adapter.
vulkan:
	@icd=""; for f in /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json; do [ -e "$$f" ] && icd=1; done; \
	loader=""; for f in /usr/lib/*/libvulkan.so.1 /usr/lib/libvulkan.so.1 /usr/lib64/libvulkan.so.1; do \
		[ -e "$$f" ] && loader=1; done; \
	if [ -z "$$icd" ] || [ -z "$$loader" ]; then $(call apt_install,$(VULKAN_DEBS)); fi

install: $(STAMP) vulkan

# The webgpu package from package-lock.json into tests/tint/node_modules (tests/tint_check.py runs it);
# redone only when package.json or package-lock.json change.
$(TINT_STAMP): $(TINT_DIR)/package.json $(TINT_DIR)/package-lock.json
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then $(call apt_install,$(NODE_DEBS)); fi
	npm ci --prefix $(TINT_DIR) --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error
	@touch $@

tint: $(TINT_STAMP)

# Headless Chromium for the browser check of exported modules; installed only when missing.
browser:
	@if ! command -v chromium >/dev/null 2>&1; then $(call apt_install,$(BROWSER_DEBS)); fi

demo: install
	$(PY) -m vyre.demo

# Lint and types: ruff over the code and the tests, mypy over the files listed in pyproject.toml.
check: $(STAMP)
	$(PY) -m ruff check vyre tests benches examples
	$(PY) -m mypy

# The GPU tests run twice: on wgpu-native's entry points (the fast path) and, with VYRE_WGPU_NATIVE=0,
# on wgpu-py's public API (what an unknown wgpu-py version gets).
PUBLIC_API_TESTS := tests/backends/wgpu tests/backends/test_protocol.py tests/backends/test_parity.py

test: install tint browser check
	$(PY) -m pytest -n $(PYTEST_JOBS) $(PYTEST_ARGS)
	VYRE_WGPU_NATIVE=0 $(PY) -m pytest -n $(PYTEST_JOBS) $(PYTEST_ARGS) $(PUBLIC_API_TESTS)
	$(MAKE) --no-print-directory docs-build

# The documentation site (mkdocs.yml, docs/): --strict turns every warning (a broken link, a docstring
# mkdocstrings cannot read) into a failure; the generated pages come from docs/hooks.py. Material's notice
# about its successor is not a warning about this site: NO_MKDOCS_2_WARNING silences it.
docs-build docs: export NO_MKDOCS_2_WARNING := 1
docs-build: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir site

docs: $(STAMP)
	$(VENV)/bin/mkdocs serve

clean:
	rm -rf $(VENV) site .pytest_cache .hypothesis .mypy_cache .ruff_cache build *.egg-info $(TINT_DIR)/node_modules
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
