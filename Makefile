# The two commands of the README:
#   make run    — install (first time) and run the proxy on policies/default.yaml
#   make test   — install (first time) and run the whole test suite (lint, types, tests)
# `make test-fast` skips the slow soak/load suites (CI never does).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
# Claude Code, a real client the end-to-end tests run through the proxy (pinned: its
# releases change what it sends; docs/notes/claude-code-wire.md records this version).
CLAUDE_CODE_VERSION := 2.1.197
CLAUDE := $(VENV)/claude-code-$(CLAUDE_CODE_VERSION)/node_modules/.bin/claude
export HOOKGATE_TEST_CLAUDE := $(abspath $(CLAUDE))
# Codex CLI, Gemini CLI, opencode and the Vercel AI SDK (pinned in .ci/clients/).
CLIENTS := $(VENV)/clients
export HOOKGATE_TEST_CLIENTS := $(abspath $(CLIENTS))

.PHONY: run test test-fast check docs system-deps claude-code clients bench schema dashboards clean

run: $(STAMP)
	$(BIN)/hookgate serve

test: $(STAMP) system-deps claude-code clients check
	$(BIN)/pytest -q $(PYTEST_ARGS)

test-fast: $(STAMP) system-deps claude-code clients check
	$(BIN)/pytest -q --skip-slow $(PYTEST_ARGS)

system-deps:
	bash .ci/system-deps.sh

claude-code: system-deps
	test -x $(CLAUDE) || bash .ci/claude-code.sh $(CLAUDE_CODE_VERSION) $(VENV)/claude-code-$(CLAUDE_CODE_VERSION)

check: $(STAMP)
	$(BIN)/ruff check proxy tests bench dashboards evals docs/hooks
	$(BIN)/ruff format --check proxy tests bench dashboards evals docs/hooks
	$(BIN)/mypy
	$(BIN)/mypy docs/hooks
	$(BIN)/lint-imports --no-cache
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

# The docs site (mkdocs.yml) in site/, strictly: a broken link or anchor, a page out of the
# nav or a config key without a description fails. Not --quiet: it hides the warnings that
# --strict counts, and the build passes.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d site

clients: system-deps
	cmp -s .ci/clients/package-lock.json $(CLIENTS)/.installed-lock.json || bash .ci/clients.sh $(CLIENTS)

bench: $(STAMP)
	$(BIN)/python -m bench.run

schema: $(STAMP)
	$(BIN)/hookgate schema -o hookgate.schema.json

dashboards: $(STAMP)
	$(BIN)/python dashboards/build.py

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info site
