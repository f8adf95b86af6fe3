# Tessera: `make run` starts the provider, `make test` runs every test.
.DEFAULT_GOAL := help
CARGO ?= cargo

.PHONY: help run build test ci fmt clippy lint interop-deps

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

run: ## Build (release) and start Tessera on ./tessera.db at http://127.0.0.1:9000
	$(CARGO) run --release -- serve

build: ## Build the release binary into target/release/tessera
	$(CARGO) build --release

test: ## Run the whole test suite (on SQLite, and on PostgreSQL when it is installed)
	CARGO=$(CARGO) bash scripts/test.sh

fmt: ## Format the code
	$(CARGO) fmt --all

clippy: ## Lint, warnings are errors
	$(CARGO) clippy --workspace --all-targets -- -D warnings

lint: ## Format check, the import rules, no source file over 500 lines, clippy with warnings as errors (functions at most 80 lines), scripts parse
	$(CARGO) fmt --all -- --check
	python3 scripts/check-imports.py
	find src stress/src tessera-bcrypt/src -name '*.rs' -print0 | xargs -0 wc -l \
		| awk '$$2 != "total" && $$1 > 500 { print "over 500 lines: " $$2 " (" $$1 ")"; bad = 1 } END { exit bad }'
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	node --check stress/lib/flow.js
	node --check stress/peer/server.mjs
	node --check tests/browser/journey.mjs
	node --check tests/browser/spa.mjs
	node --check tests/browser/mail.mjs
	node --check tests/browser/totp.mjs
	node --check tests/browser/federation.mjs
	node --check tests/browser/forward_auth.mjs
	node --check tests/browser/passkey_modes.mjs
	node --check tests/browser/passkey_only.mjs
	for f in tests/interop/*.mjs; do node --check "$$f"; done
	for f in tests/browser/spa/*.js; do node --check "$$f"; done
	node --check static/passkey.js
	for f in stress/*.js; do node --check "$$f"; done
	python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' scripts/hot-functions.py
	for f in stress/*.sh scripts/*.sh .ci/run; do bash -n "$$f"; done

ci: lint test ## What CI runs: the lints, then the README's test command

interop-deps: ## Install the relying-party libraries the interoperability tests use
	python3 -m pip install --quiet -r tests/interop/requirements.txt
	npm ci --prefix tests/interop --no-audit --no-fund
	npm ci --prefix tests/browser --no-audit --no-fund

# Stress runs: k6 when installed, the Rust driver (stress/) otherwise. See stress/README.md.
.PHONY: stress-server stress-smoke stress-load stress-spike stress-ceiling stress-ratelimit stress-bench stress-peer stress-report hot-functions
stress-server: ## Start Tessera on a fresh DB with the stress client and users; print the env
	bash stress/server.sh
stress-smoke: ## 1 VU, 30 s, 1 s think time
	bash stress/run.sh smoke
stress-load: ## 20 VUs, 3 min, 1 s think time
	bash stress/run.sh load
stress-spike: ## 0 → 10 → 100 VUs, hold 1 min, down; 0.5 s think time
	bash stress/run.sh spike
stress-ceiling: ## 50 → 500 VUs in steps of 30 s, hold 500 for 1 min; 0.5 s think time
	bash stress/run.sh ceiling
stress-ratelimit: ## 50 login attempts/s; expects 429 with Retry-After
	bash stress/run.sh ratelimit
stress-bench: ## bcrypt ceiling, writer commits/s, per-endpoint throughput, storm
	bash stress/run.sh bench
hot-functions: ## Rewrite link/hot-functions.txt from a callgrind profile of a server (needs valgrind)
	python3 scripts/hot-functions.py

stress-peer: ## The same scenarios against Tessera and node oidc-provider, alternating; ratios and server CPU
	cargo build --release -p tessera
	cargo build --release -p tessera-stress
	bash stress/side-by-side.sh
stress-report: ## Soak, introspection at 600 VUs, start-up and operations, storage, kill -9, refresh, algorithms (about 30 min)
	bash stress/report.sh
