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

# libFuzzer on the intake decoder (every input format), from the committed
# seed corpus for FUZZ_SECONDS; new inputs go to .build/fuzz/corpus, a crash to
# .build/fuzz/crash-*. A crash becomes a regression test: copy the input to
# Tests/Fuzz/regressions/ (FuzzCorpusTests replays it in `make test`).
# Built with swiftc from the decoder's own sources: SwiftPM cannot link one
# target with the fuzzer's main.
FUZZ_SECONDS ?= 60
FUZZ_SOURCES := $(addprefix Sources/TxRecon/Intake/,InputDecoder.swift CompactJWS.swift Base64URL.swift Item.swift \
	Rejection.swift RejectionCode.swift PayloadReader.swift AppStorePayloads.swift JSONValueDescription.swift) \
	Sources/TxRecon/Support/JSONValue.swift Tests/Fuzz/InputDecoderFuzzer.swift

.build/fuzz/input-decoder: $(FUZZ_SOURCES)
	mkdir -p .build/fuzz
	swiftc -sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 -module-name TxReconFuzz \
	  -use-ld=lld $(FUZZ_SOURCES) -o $@

fuzz: .build/fuzz/input-decoder
	mkdir -p .build/fuzz/corpus
	.build/fuzz/input-decoder .build/fuzz/corpus Tests/Fuzz/corpus Tests/Fuzz/regressions \
	  -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 -artifact_prefix=.build/fuzz/ -print_final_stats=1

# The whole test suite once under AddressSanitizer and once under
# ThreadSanitizer (the daemon binary the integration tests run included),
# each in its own build directory so the normal build stays as it is.
# Leak checking is off for the suite: unit tests deliberately abandon engines
# whose attempts never end (a backend that hangs), which LeakSanitizer reports
# when the test process exits. The daemon's own exit is leak-checked by
# Tests/Sanitize/daemon-leak-check.sh.
sanitize: deps
	ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test --sanitize=address --scratch-path .build/asan
	sh Tests/Sanitize/daemon-leak-check.sh .build/asan/debug/txrecon
	TSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitize/tsan.supp \
	  $(SWIFT) test --sanitize=thread --scratch-path .build/tsan

clean:
	rm -rf .build
