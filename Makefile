# Two entry points for a fresh machine: `make run` and `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8501
ADDRESS ?=
RUN_ARGS ?=
STRESS_COUNT ?= 5
STRESS_BUSY ?= 2
STRESS_TESTS ?=
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export NO_MKDOCS_2_WARNING := 1

.PHONY: run test test-stress install demo-memory browser wordnet clean docs docs-build docs-screens

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Re-install only when the project definition changes.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Debian's chromium for the browser tests; Playwright never downloads a browser here.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing Debian chromium"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

# WordNet's database, whose antonyms the verifier's recipe reads (cns train-verifier; config/verifier_train.yaml).
wordnet:
	@if [ ! -f /usr/share/wordnet/data.adj ]; then \
		echo "installing Debian wordnet-base"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wordnet-base >/dev/null; \
	fi

# Demo data for every page (idempotent): 300 turns through the coherence hook into the memory,
# and the bundled examples/ evaluated as a finished corpus run. `make run` writes it itself, in the
# background (cns run --demo-data); this target writes it in the foreground.
demo-memory: $(STAMP)
	$(PY) -m cns_core.cli.demo_data

# The dashboard and the judge loop (bus proxy, CriticAgent, MemoryAgent) as supervised children of
# `cns run`: one Ctrl-C stops them all. The dashboard answers first; the demo data (demo-memory's) is
# written behind it, once, by a child of `cns run` (--demo-data), and the pages say how far it has got.
# A judge loop of the same state folder already running is used as it is; one of another folder on the
# bus ports is left alone and ours starts on free ports.
# The dashboard listens on 127.0.0.1 (cns run's default); ADDRESS=0.0.0.0 RUN_ARGS=--new-token make run shares
# it behind a new access token.
run: $(STAMP)
	$(VENV)/bin/cns run --port $(PORT) --demo-data $(if $(ADDRESS),--address $(ADDRESS)) $(RUN_ARGS)

# Ends with the 15 slowest tests (pytest's --durations) and the wall time pytest took.
test: $(STAMP) browser
	@start=$$(date +%s); \
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder -q --durations=15; status=$$?; \
	echo "make test: pytest took $$(( $$(date +%s) - start )) s of wall time"; exit $$status

# The browser, process and Ray tests STRESS_COUNT times (5), each round a fresh session run as `make test` runs
# it, with STRESS_BUSY (2) processes spinning on the CPU (scripts/stress_tests.py; docs/development.md).
# STRESS_TESTS narrows it to files, patterns or node ids: make test-stress STRESS_COUNT=2 STRESS_TESTS=tests/test_bus.py
test-stress: $(STAMP) browser
	$(PY) scripts/stress_tests.py --count $(STRESS_COUNT) --busy $(STRESS_BUSY) $(STRESS_TESTS)

# The documentation site (docs/, mkdocs.yml). The CLI and configuration references are generated from the
# code at build time (scripts/docs_hooks.py); make test builds the site with --strict (tests/test_docs.py).
# Not 8000: the README's OpenAI-compatible judge example serves there (vLLM's default port).
DOCS_ADDR ?= 127.0.0.1:8765
docs: $(STAMP)
	$(PY) -m mkdocs serve --strict --dev-addr $(DOCS_ADDR)

docs-build: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

# The screenshots of the docs and the README: Chromium driven through the running `make run` app on PORT,
# else through a small demo dashboard of its own (scripts/docs_screens.py).
docs-screens: $(STAMP) browser
	PORT=$(PORT) $(PY) scripts/docs_screens.py

clean:
	rm -rf $(VENV) .cns test-artifacts site
