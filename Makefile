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
	$(BIN)/python demo/make_sample.py .demo/sample .demo/state
	$(BIN)/taskctx read .demo/sample docs --records .demo/state \
		--source skill_library:root=.demo/skills,trusted=review-upload,required=review-upload \
		--put-required instruction="Answer from these files only; cite refs." \
		--query "why does the upload time out after 30 s?" \
		--max-chars 6000 --max-blocks 12

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache
