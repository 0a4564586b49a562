# Two commands for a new user (see README):  make demo   and   make test
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check

.PHONY: demo test test-fast lint fuzz bench screenshots package clean

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "dpstudio needs Python >= 3.11, found " + sys.version.split()[0]'
	@$(PYTHON) -m venv $(VENV) || { echo "python3 -m venv failed: on Debian/Ubuntu run 'sudo apt-get install python3-venv' and retry"; exit 2; }
	$(PIP) install -q --upgrade pip

$(VENV)/.installed-app: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(PIP) install -q -e '.[test,cluster]'
	@touch $@ $(VENV)/.installed-app

# Opens the GUI on the demo data; without a display it runs the headless release of the demo.
demo: $(VENV)/.installed-app
	$(PY) -m dpstudio demo

# System tools the suite needs (PDF text extraction); installed when missing and we are root.
test-deps:
	@command -v pdftotext >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils >/dev/null) || echo "warning: could not install poppler-utils; PDF text checks will be skipped"; \
	  else echo "note: pdftotext missing (apt-get install poppler-utils) - PDF text checks will be skipped"; fi; }

test: $(VENV)/.installed-test test-deps
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider tests

# The edit loop: everything but the GUI and the tests marked slow (`make test` runs them all).
test-fast: $(VENV)/.installed-test
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider -m "not slow" --ignore=tests/gui tests

# Static checks (configuration in pyproject.toml); does not modify any file.  ruff: lint and
# format (`ruff format` fixes the layout);
# mypy: strict for the engine and the plan; import-linter: the layers of docs/architecture.md.
lint: $(VENV)/.installed-test
	$(PY) -m ruff check dpstudio tests benchmarks packaging resources
	$(PY) -m ruff format --check dpstudio tests benchmarks packaging resources
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

# The full fuzz and fault suite (1,200 cases; the fast subset is part of `make test`); prints JSON.
fuzz: $(VENV)/.installed-test
	QT_QPA_PLATFORM=offscreen $(PY) tests/fuzz/harness.py --cases 1200

bench: $(VENV)/.installed-test
	$(PY) benchmarks/bench_load.py

# Every wizard page of every release type at 1280x820 and 1024x700, and every page of each PDF
# report (pdftoppm, from poppler-utils; skipped with a message without it), into screenshots/.
screenshots: $(VENV)/.installed-test
	QT_QPA_PLATFORM=offscreen $(PY) -m dpstudio.gui.screenshots screenshots

package: $(VENV)/.installed-app
	$(MAKE) -C packaging all PY=../$(PY)

clean:
	rm -rf $(VENV) build dist *.egg-info screenshots
