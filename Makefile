# make demo / make test / make bench / make lint. Each target bootstraps .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DISTS := $(wildcard core/pyproject.toml plugins/*/pyproject.toml contrib/*/pyproject.toml)

.PHONY: demo test bench lint clean

$(STAMP): requirements-dev.txt $(DISTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m taskctx read \
		--put-file information=docs/concepts.md \
		--put-required instruction="Answer from the concepts page only." \
		--query "what does coverage tell an agent about omitted material?" \
		--max-chars 8000 --max-blocks 8

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
