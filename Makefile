# Two commands matter: `make demo` and `make test`. Everything else is a step they use.
PYTHON ?= python3
DATASETTE_STABLE := datasette>=0.65,<1.0
# The newest 1.0 alpha, bumped deliberately after running the suite against it.
DATASETTE_ALPHA := datasette==1.0a41
# datasette-llm installs on the 1.0 alphas only; its answer path is tested there.
DATASETTE_LLM := datasette-llm==0.1a8
# datasette-agent (1.0 alphas only) offers the research and promotion tools in its chat.
DATASETTE_AGENT := datasette-agent==0.4a0
# datasette-secrets holds provider keys on 1.0; its 0.2 (which datasette-llm pulls in) fails
# on 1.0a41's /-/secrets, 0.3a0 works.
DATASETTE_SECRETS := datasette-secrets==0.3a0
PORT ?= 8001
# The offline fake of Brave, Exa and SearXNG. metadata.yml names 8002; another port is written
# into demo/metadata.yml, which the demo then serves with.
FAKEWEB_PORT ?= 8002
# The demo's web search goes to the offline fake provider server with these (fake) keys.
DEMO_KEYS := BRAVE_SEARCH_API_KEY=demo-brave-key EXA_API_KEY=demo-exa-key

VENV := .venv
VENV_ALPHA := .venv-alpha

CHROMIUM ?= /usr/bin/chromium
# The page's 👍 / 👎 need a colour emoji font to show in the screenshots.
EMOJI_FONT := /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf

.PHONY: demo demo-reset docs test test-stable test-alpha lint bench bench-ir bench-answer eval clean
.PHONY: bench-feedback bench-verdict bench-spelling bench-deep bench-abstain
.PHONY: browser-deps

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test,semantic,fetch]' '$(DATASETTE_STABLE)'
	touch $@

$(VENV_ALPHA)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV_ALPHA)
	$(VENV_ALPHA)/bin/pip install --quiet --upgrade pip
	$(VENV_ALPHA)/bin/pip install --quiet -e '.[test,semantic,fetch]' '$(DATASETTE_ALPHA)' \
		'$(DATASETTE_LLM)' \
		'$(DATASETTE_AGENT)' \
		'$(DATASETTE_SECRETS)'
	touch $@

# Rebuilt when the demo's builder or text changes, so an updated checkout shows the new demo.
demo/brain.db: $(VENV)/.installed datasette_dbrain_websearch/demo/builder.py \
    datasette_dbrain_websearch/demo/curated.py datasette_dbrain_websearch/demo/rows.py \
    datasette_dbrain_websearch/demo/topics.py datasette_dbrain_websearch/demo/corpus.py
	mkdir -p demo
	$(VENV)/bin/datasette dbrain-demo demo/brain.db --force
	$(VENV)/bin/datasette dbrain-websearch index demo/brain.db

demo: $(VENV)/.installed demo/brain.db
	@echo ""
	@echo "  Research page: http://127.0.0.1:$(PORT)/-/research"
	@echo "  JSON API:      http://127.0.0.1:$(PORT)/-/research.json?q=sqlite+fts5"
	@echo "  Web search:    http://127.0.0.1:$(PORT)/-/research?q=lattice+qcd&external=always"
	@echo "                 (offline: a fake Brave/Exa/SearXNG on 127.0.0.1:$(FAKEWEB_PORT))"
	@echo "  Promote:       open the /-/auth-token link printed below to sign in as root"
	@echo "  Usage, caps:   http://127.0.0.1:$(PORT)/-/research/usage (as root)"
	@echo ""
	@$(VENV)/bin/python -m datasette_dbrain_websearch.demo.links $(PORT)
	@echo ""
	@$(VENV)/bin/python -c "$$FREE_PORTS" $(PORT) $(FAKEWEB_PORT)
	sed 's#127.0.0.1:8002#127.0.0.1:$(FAKEWEB_PORT)#' metadata.yml > demo/metadata.yml
	$(VENV)/bin/python -m datasette_dbrain_websearch.demo.fakeweb --port $(FAKEWEB_PORT) \
		--brave-key demo-brave-key --exa-key demo-exa-key & fake=$$!; \
	trap 'kill $$fake 2>/dev/null' EXIT INT TERM; \
	$(DEMO_KEYS) $(VENV)/bin/datasette serve demo/brain.db \
		--metadata demo/metadata.yml --host 127.0.0.1 --port $(PORT) --root

# A busy port is one line that names it, not a server's traceback.
define FREE_PORTS
import socket, sys
for port in sys.argv[1:]:
    with socket.socket() as s:
        # As servers bind: a port a stopped demo left in TIME_WAIT is free, a listener is not.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", int(port)))
        except OSError:
            sys.exit(f"Port {port} on 127.0.0.1 is busy: stop what uses it, or choose free "
                     "ones: make demo PORT=<port> FAKEWEB_PORT=<port>")
endef
export FREE_PORTS

# Promotions write into demo/brain.db; this puts the demo brain (and its runs) back as built.
demo-reset: $(VENV)/.installed
	rm -f demo/brain.db demo/brain.db-wal demo/brain.db-shm demo/research_runs.db* demo/metadata.yml
	$(VENV)/bin/datasette dbrain-demo demo/brain.db --force
	$(VENV)/bin/datasette dbrain-websearch index demo/brain.db

# The pages with parts generated from the code (cog blocks): `make docs` writes them.
GENERATED_DOCS := docs/configuration.md docs/development.md docs/cli.md docs/json-api.md docs/research.md

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/cog --check -I scripts $(GENERATED_DOCS)
	$(VENV)/bin/mypy

test-stable: $(VENV)/.installed
	@$(VENV)/bin/python -c "import datasette.version as v; print('== Datasette', v.__version__)"
	$(VENV)/bin/pytest -q

test-alpha: $(VENV_ALPHA)/.installed
	@$(VENV_ALPHA)/bin/python -c "import datasette.version as v; print('== Datasette', v.__version__)"
	$(VENV_ALPHA)/bin/pytest -q

# The browser tests drive Debian's Chromium through Playwright (no browser download).
browser-deps:
	@if [ ! -x "$(CHROMIUM)" ] || [ ! -e "$(EMOJI_FONT)" ]; then \
	  apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    chromium fonts-liberation fonts-noto-color-emoji; \
	fi
	@$(CHROMIUM) --version 2>/dev/null

test: lint browser-deps test-stable test-alpha

# The docs' generated parts: the configuration reference, the module map, the commands' help
# and an example pack, each from the code it documents (`make lint` checks them).
docs: $(VENV)/.installed
	$(VENV)/bin/cog -r -I scripts $(GENERATED_DOCS)

# The eval set expects the demo brain as built (promoting into demo/brain.db changes answers).
eval: $(VENV)/.installed
	mkdir -p demo
	$(VENV)/bin/datasette dbrain-demo demo/eval-brain.db --force
	$(VENV)/bin/datasette dbrain-websearch eval evals/demo.json demo/eval-brain.db

# Answer quality on a SQuAD-layout QA collection beside plain baselines (the shared SQuAD
# articles, or the file DBRAIN_QA_DATA names).
bench-answer: $(VENV)/.installed
	$(VENV)/bin/python bench/bench_answer_quality.py $(ARGS)

# Relevance feedback on a public test collection: marks as a person gives them (bench_feedback.py).
bench-feedback: $(VENV)/.installed
	$(VENV)/bin/python bench/bench_feedback.py $(ARGS)

# Ranking quality on a public test collection beside plain BM25 baselines (bench/bench_ir.py).
bench-ir: $(VENV)/.installed
	$(VENV)/bin/pip install --quiet bm25s PyStemmer
	$(VENV)/bin/python bench/bench_ir.py $(ARGS)

# Does the verdict know what the brain holds? The shared collections as brains, asked their own
# questions, the others' and nonsense (bench/bench_verdict.py; ARGS="--fit --sweep" refits).
bench-verdict: $(VENV)/.installed
	$(VENV)/bin/python bench/bench_verdict.py $(ARGS)
	$(VENV)/bin/python bench/bench_verdict.py --no-semantic $(ARGS)

# Multi-step questions from the brain and the fake web, quick and deep (bench/bench_deep.py):
# what the runs find, and what deep runs say of themselves (stop reason, confidence).
bench-deep: $(VENV)/.installed
	$(VENV)/bin/python bench/bench_deep.py --modes quick,deep $(ARGS)

# Does a run say "no answer" when nothing answers? SQuAD 2.0's answerable and unanswerable
# questions, and other collections' (bench/bench_abstain.py).
bench-abstain: $(VENV)/.installed
	$(VENV)/bin/python bench/bench_abstain.py $(ARGS)

# Did you mean: typos given their word back, real words left alone (bench/bench_spelling.py).
bench-spelling: $(VENV)/.installed
	$(VENV)/bin/python bench/bench_spelling.py $(ARGS)

bench: $(VENV)/.installed
	$(VENV)/bin/python bench/bench_research.py
	$(VENV)/bin/python bench/bench_research.py --collection cranfield,squad,hotpotqa
	$(VENV)/bin/python bench/bench_known_item.py
	$(VENV)/bin/python bench/bench_web.py
	$(VENV)/bin/python bench/bench_answer.py
	$(VENV)/bin/python bench/bench_load.py
	$(VENV)/bin/python bench/bench_fairness.py
	$(VENV)/bin/python bench/bench_locks.py
	$(VENV)/bin/python bench/bench_limits.py

clean:
	rm -rf $(VENV) $(VENV_ALPHA) demo/brain.db .pytest_cache
