# Two commands matter: `make demo` and `make test`. Everything else is a step they use.
PYTHON ?= python3
DATASETTE_STABLE := datasette>=0.65,<1.0
# The newest 1.0 alpha, bumped deliberately after running the suite against it.
DATASETTE_ALPHA := datasette==1.0a41
PORT ?= 8001

VENV := .venv
VENV_ALPHA := .venv-alpha

.PHONY: demo test test-stable test-alpha lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]' '$(DATASETTE_STABLE)'
	touch $@

$(VENV_ALPHA)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV_ALPHA)
	$(VENV_ALPHA)/bin/pip install --quiet --upgrade pip
	$(VENV_ALPHA)/bin/pip install --quiet -e '.[test]' '$(DATASETTE_ALPHA)'
	touch $@

demo/brain.db: $(VENV)/.installed
	mkdir -p demo
	$(VENV)/bin/datasette dbrain-demo demo/brain.db --force

demo: $(VENV)/.installed demo/brain.db
	@echo ""
	@echo "  Research page: http://127.0.0.1:$(PORT)/-/research"
	@echo "  JSON API:      http://127.0.0.1:$(PORT)/-/research.json?q=sqlite+fts5"
	@echo ""
	$(VENV)/bin/datasette serve demo/brain.db --metadata metadata.yml --host 127.0.0.1 --port $(PORT)

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test-stable: $(VENV)/.installed
	@$(VENV)/bin/python -c "import datasette.version as v; print('== Datasette', v.__version__)"
	$(VENV)/bin/pytest -q

test-alpha: $(VENV_ALPHA)/.installed
	@$(VENV_ALPHA)/bin/python -c "import datasette.version as v; print('== Datasette', v.__version__)"
	$(VENV_ALPHA)/bin/pytest -q

test: lint test-stable test-alpha

bench: $(VENV)/.installed
	$(VENV)/bin/python bench/bench_research.py

clean:
	rm -rf $(VENV) $(VENV_ALPHA) demo/brain.db .pytest_cache
