# Every target builds its own virtualenv first, so a fresh clone needs only Python 3.11+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python builds from source, without the image/audio library. It is built
# for any x86-64 CPU with AVX2, not for this one: a build for the host CPU crashed
# (segmentation fault at the first batched evaluation) on a virtual machine whose CPU
# advertises AVX-512 and AMX. Elsewhere the x86 switches are ignored.
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
  -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: venv demo test lint typecheck unit integration compat docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# No wheel cache: a cached llama-cpp-python wheel may have been built with other flags.
	$(BIN)/python -m pip install -q --no-cache-dir -e ".[dev,local,docs]"
	touch $(STAMP)

venv: $(STAMP)

## The main job: extract a validated object with the embedded local model.
demo: $(STAMP)
	$(BIN)/structx extract --schema examples/contact/contact.json \
	  "Reach Maria Lopez at maria.lopez@example.org or +1 415 555 0199; she is the CTO of Acme Robotics."

lint: $(STAMP)
	$(BIN)/ruff check langchain_structx tests benchmarks examples
	$(BIN)/ruff format --check langchain_structx tests benchmarks examples
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/mypy tests/typing

# Tests run on two worker processes (pytest-xdist): most are CPU-bound Python.
XDIST := -n 2

## The inner loop: lint, import layers and the unit tests; no model, no servers.
unit: lint
	$(BIN)/python -m pytest $(XDIST) tests/unit langchain_structx -q -p no:cacheprovider

## The whole suite: lint, types, unit + integration tests with coverage, compat, docs.
test: lint typecheck
	STRUCTX_NO_SKIP=1 $(BIN)/python -m pytest $(XDIST) --cov --cov-report=term
	$(MAKE) compat
	$(MAKE) docs

compat: $(STAMP)
	$(BIN)/python -m pytest -p tests.compat.plugin tests/compat -q

docs: $(STAMP)
	$(BIN)/mkdocs build --strict

bench: $(STAMP)
	for f in parse agent_overhead noisy_outputs streaming dialects providers hostile hostile_schemas scale local_model openai_compatible batch provider_batch; do \
	  $(BIN)/python benchmarks/$$f.py || exit 1; done
	$(BIN)/python benchmarks/render_page.py

clean:
	rm -rf $(VENV) dist build site .coverage .mypy_cache .ruff_cache .pytest_cache
