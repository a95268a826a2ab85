# txrecon — build, test, demo, install.
#
# `make test` and `make demo` work on a fresh Debian 12 machine with the Swift
# toolchain on PATH: both first run `make deps`, which installs the Debian
# packages the build needs when they are missing.

SWIFT        ?= swift
PREFIX       ?= /usr
DESTDIR      ?=
CONFIGURATION ?= debug

DEB_PACKAGES := pkg-config libsystemd-dev libcurl4-openssl-dev libssl-dev openssl python3

.PHONY: all deps build release test demo metrics-check clean

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

# txrecon.prom as a real node_exporter (Debian's prometheus-node-exporter)
# exports it. Installs the package when missing, without its recommends;
# note that Debian enables its service on :9100. The check runs its own
# instance on a free loopback port.
metrics-check: deps
	@command -v prometheus-node-exporter >/dev/null || { \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus-node-exporter; }
	$(SWIFT) build
	BIN=.build/debug/txrecon ./Tests/metrics/node-exporter-check.sh --daemon

clean:
	rm -rf .build
