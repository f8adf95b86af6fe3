# Tessera: `make run` starts the provider, `make test` runs every test.
.DEFAULT_GOAL := help
CARGO ?= cargo

.PHONY: help run build test ci fmt clippy interop-deps

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

run: ## Build (release) and start Tessera on ./tessera.db at http://127.0.0.1:9000
	$(CARGO) run --release -- serve

build: ## Build the release binary into target/release/tessera
	$(CARGO) build --release

test: ## Run the whole test suite
	$(CARGO) test --all-targets

fmt: ## Format the code
	$(CARGO) fmt --all

clippy: ## Lint, warnings are errors
	$(CARGO) clippy --all-targets -- -D warnings

ci: ## What CI runs: format check, lints, tests
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) test --all-targets

interop-deps: ## Install the relying-party libraries the interoperability tests use
	python3 -m pip install --quiet -r tests/interop/requirements.txt
	npm ci --prefix tests/interop --no-audit --no-fund
