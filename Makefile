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

.PHONY: all deps build release test demo soak fuzz sanitize clean

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

# Only the daemon's product: the test-support target imports TxRecon with
# @testable, which a release build does not allow.
release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product txrecon

test: deps
	$(SWIFT) build
	$(SWIFT) test

# The example backend, the daemon on a throw-away spool, the samples delivered.
demo: deps
	$(SWIFT) build
	BIN=.build/debug/txrecon ./Examples/demo.sh

# The kill test (docs/crash-consistency.md): the release daemon SIGKILLed
# dozens of times under a failing backend; a few minutes. Longer runs:
# SOAK_KEYS=5000 SOAK_KILLS=200 make soak (see Tests/Soak/soak.py).
soak: release
	python3 Tests/Soak/soak.py .build/release/txrecon
	$(SWIFT) build --build-tests
	TXRECON_BINARY=$(CURDIR)/.build/release/txrecon TXRECON_BURST_FILES=100000 \
	  $(SWIFT) test --skip-build --filter InboxBurstTests

clean:
	rm -rf .build
