# txrecon — build, test, demo, install.
#
# `make test` and `make demo` work on a fresh Debian 12 machine with the Swift
# toolchain on PATH: both first run `make deps`, which installs the Debian
# packages the build needs when they are missing.

SWIFT        ?= swift
PREFIX       ?= /usr
DESTDIR      ?=
CONFIGURATION ?= debug

DEB_PACKAGES := pkg-config libsystemd-dev libcurl4-openssl-dev libssl-dev python3

.PHONY: all deps build release test demo clean bench bench-long bench-profile

all: build

# Installs only what is missing; needs root (or sudo) the first time.
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --static-swift-stdlib

test: deps
	$(SWIFT) build
	$(SWIFT) test

# The example backend, the daemon on a throw-away spool, the samples delivered.
demo: deps
	$(SWIFT) build
	BIN=.build/debug/txrecon ./Examples/demo.sh

clean:
	rm -rf .build

# The benchmark (issue 6): builds the release binary, runs it against nginx
# on 127.0.0.1 (fetched from Debian when missing), prints a Markdown table
# and writes it to bench/results.md. About 15 minutes; pass options with
# BENCH_FLAGS, e.g. BENCH_FLAGS="--runs 5" or "--only drain,latency"
# (python3 bench/bench.py --help lists them). bench-long drains 1,000,000
# items for the RSS measurement instead of 200,000; bench-profile records one
# drain with perf (linux-perf) into .build/bench/profile.txt.
BENCH_FLAGS ?=

bench: deps
	python3 bench/bench.py $(BENCH_FLAGS)

bench-long: deps
	python3 bench/bench.py --long $(BENCH_FLAGS)

bench-profile: deps
	python3 bench/bench.py --only profile $(BENCH_FLAGS)
