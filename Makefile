# txrecon — build, test, demo, install.
#
# `make test` and `make demo` work on a fresh Debian 12 machine with the Swift
# toolchain on PATH: both first run `make deps`, which installs the Debian
# packages the build needs when they are missing (apt-get, with sudo when not
# root) and unpacks nats-server for the tests into .build/nats-server/
# without installing it (see NATS_SERVER). Nothing else on the machine
# changes: no service is enabled, no user is added.
#
# `make install` (DESTDIR, PREFIX) installs the release binary, the systemd
# unit, tmpfiles, sysusers and catalog files, the manual pages, the sample
# configuration (never over an existing one) and Apple's root certificate.
# `make deb` builds .build/deb/txrecon_<version>_<arch>.deb with dpkg-deb.
# `make systemd-test` (root) runs Tests/systemd/run.sh: the release binary and
# the package under a real systemd 252 in throw-away containers.

SWIFT        ?= swift
PREFIX       ?= /usr
DESTDIR      ?=
CONFIGURATION ?= debug

BINDIR       ?= $(PREFIX)/bin
MANDIR       ?= $(PREFIX)/share/man
DATADIR      ?= $(PREFIX)/share/txrecon
# systemd also reads units, tmpfiles, sysusers and catalogs under /usr/local/lib.
LIBDIR       ?= $(PREFIX)/lib
SYSCONFDIR   ?= /etc

# The build's libraries, and openssl and python3 for the tests and the demo.
DEB_PACKAGES := pkg-config libsystemd-dev libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libnats-dev libsqlite3-dev \
                openssl python3
# nats-server: the JetStream destination's tests start a real one of their
# own, on a free loopback port. Debian's package is not installed: its
# postinst enables and starts a system-wide NATS server at every boot, on a
# developer's or an operator's machine. Its .deb is fetched instead (apt-get
# download, no root needed) and unpacked with dpkg -x into .build/nats-server/,
# where the tests look first (Tests/TxReconTestSupport/NATSServerProcess.swift);
# `make clean` removes it with the rest of .build.
NATS_SERVER := .build/nats-server/usr/sbin/nats-server
# What `make check-docs` needs besides; and `make deb` and `make systemd-test`.
DOCS_PACKAGES := groff
SYSTEMD_TEST_PACKAGES := $(DOCS_PACKAGES) systemd-container debootstrap dpkg-dev jq

RELEASE_BINARY := .build/release/txrecon
# TxReconVersion.current, the version the binary reports.
VERSION  := $(shell sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/TxRecon/Service/CommandLineSupport.swift 2>/dev/null)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB_STAGE = .build/deb/txrecon_$(VERSION)_$(DEB_ARCH)

.PHONY: all deps nats-server deps-docs deps-systemd-test build release test test-loaded demo metrics-check clean install install-files \
        deb check-docs systemd-test bench bench-long bench-profile bench-journal bench-instructions soak fuzz sanitize \
        deps-powercut powercut powercut-control nginx-test

all: build

# $(call install-missing,PACKAGES): apt-get installs those not installed yet;
# needs root (or sudo) the first time.
define install-missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call install-missing,$(DEB_PACKAGES))
	@[ -x $(NATS_SERVER) ] || $(MAKE) --no-print-directory nats-server

# Fetches and unpacks nats-server (see NATS_SERVER); changes nothing outside
# .build/. It only says so when an earlier `make deps` (which installed
# Debian's package) left the system-wide service enabled.
nats-server:
	rm -rf .build/nats-server
	mkdir -p .build/nats-server/deb
	cd .build/nats-server/deb && { apt-get download -qq nats-server 2>/dev/null || { \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; $$SUDO apt-get update -qq && apt-get download -qq nats-server; }; }
	dpkg -x .build/nats-server/deb/nats-server_*.deb .build/nats-server
	rm -rf .build/nats-server/deb
	@echo "nats-server unpacked into .build/nats-server for the tests: not installed, no service enabled"
	@if systemctl is-enabled nats-server >/dev/null 2>&1; then \
	  echo "note: a system-wide nats-server service is enabled (Debian's package, installed by an earlier make deps);" \
	    "the tests do not use it: sudo systemctl disable --now nats-server, or sudo apt purge nats-server"; fi

deps-docs: deps
	$(call install-missing,$(DOCS_PACKAGES))

deps-systemd-test: deps
	$(call install-missing,$(SYSTEMD_TEST_PACKAGES))

build: deps
	$(SWIFT) build

# Only the product: the test support library is not needed on a server.
release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product txrecon

# Swift Testing's .timeLimit reports a hung test but cannot end it, so a
# hang would hold CI until its own limit: the suite as a whole gets
# TEST_TIME_LIMIT (it takes a few minutes), then it and everything it
# started are ended and the run fails saying so (Tests/with-time-limit).
# The test targets are built first, so a slow build does not count.
TEST_TIME_LIMIT ?= 20m

test: deps
	$(SWIFT) build --build-tests
	Tests/with-time-limit $(TEST_TIME_LIMIT) $(SWIFT) test --skip-build

# The suite three times in a row while two CPU-bound processes run beside it,
# as on a busy CI machine: tests wait for events with generous bounds, never
# for a fixed time, and must pass so. The busy loops are this target's own
# (their PIDs), stopped however the runs end.
test-loaded: deps
	$(SWIFT) build --build-tests
	@yes > /dev/null & one=$$!; yes > /dev/null & two=$$!; \
	  trap 'kill $$one $$two 2>/dev/null' EXIT INT TERM; \
	  for run in 1 2 3; do \
	    echo "test-loaded: run $$run of 3, beside two busy loops"; \
	    Tests/with-time-limit $(TEST_TIME_LIMIT) $(SWIFT) test --skip-build || exit 1; \
	  done

# The whole path as an operator runs it, on loopback and throw-away spools:
# the example backend; per app the daemon and `txrecon receive`; Apple's
# notifications and the apps' uploads (a StoreKit 1 receipt among them)
# posted and delivered (Examples/demo.sh). Ends everything it starts.
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

# The kill test (docs/crash-consistency.md): the release daemon SIGKILLed
# dozens of times under a failing backend; a few minutes. Longer runs:
# SOAK_KEYS=5000 SOAK_KILLS=200 make soak (see Tests/Soak/soak.py).
soak: release
	python3 Tests/Soak/soak.py .build/release/txrecon
	$(SWIFT) build --build-tests
	TXRECON_BINARY=$(CURDIR)/.build/release/txrecon TXRECON_BURST_FILES=100000 \
	  $(SWIFT) test --skip-build --filter InboxBurstTests

# The power-cut test (Tests/powercut/run.sh; root): the release receiver and
# daemon in a qemu guest (software emulation, Debian's kernel unpacked with
# dpkg -x, the disk built from the systemd test's cached bookworm root or a
# debootstrap of its own), the guest's power cut CUTS times at random moments
# while the host posts, then every body answered 200 checked at the backend.
# About 20 s a cut, 9 minutes for 20; SEED=N repeats a run. powercut-control
# runs CONTROL_CUTS cuts with a receiver built to answer before its fsync
# (-DTXRECON_POWERCUT_ANSWER_BEFORE_FSYNC, in .build/powercut-unsafe, never
# the shipped binary) and succeeds only when that run lost acknowledged
# bodies: the test can fail.
CUTS ?= 20
# 2: a further destination too, every drop fanned out into both (Tests/powercut/run.sh).
DESTINATIONS ?= 1
CONTROL_CUTS ?= 5
POWERCUT_PACKAGES := qemu-system-x86 e2fsprogs cpio xz-utils debootstrap python3
POWERCUT_UNSAFE := .build/powercut-unsafe/release/txrecon

deps-powercut: deps
	@missing=""; for p in $(POWERCUT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages (without recommends):$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

powercut: deps-powercut release
	CUTS=$(CUTS) DESTINATIONS=$(DESTINATIONS) Tests/powercut/run.sh

powercut-control: deps-powercut
	$(SWIFT) build -c release --static-swift-stdlib --product txrecon \
	  -Xswiftc -DTXRECON_POWERCUT_ANSWER_BEFORE_FSYNC --scratch-path .build/powercut-unsafe
	VARIANT=unsafe BINARY=$(CURDIR)/$(POWERCUT_UNSAFE) CUTS=$(CONTROL_CUTS) Tests/powercut/run.sh

# libFuzzer on the intake decoder (every input format), from the committed
# seed corpus for FUZZ_SECONDS; new inputs go to .build/fuzz/corpus, a crash to
# .build/fuzz/crash-*. A crash becomes a regression test: copy the input to
# Tests/Fuzz/regressions/ (FuzzCorpusTests replays it in `make test`).
# Built with swiftc from the decoder's own sources: SwiftPM cannot link one
# target with the fuzzer's main.
FUZZ_SECONDS ?= 60
FUZZ_SOURCES := $(addprefix Sources/TxRecon/Intake/,InputDecoder.swift CompactJWS.swift DecodedInput.swift \
	PayloadReader.swift AppStorePayloads.swift JSONValueDescription.swift \
	ParsedSignedStrings.swift KnownJOSEHeaders.swift DERReader.swift AppReceipt.swift \
	InputDecoder+Receipt.swift ReceiptSplit.swift ReceiptItems.swift ContentDigest.swift) \
	$(addprefix Sources/TxRecon/Item/,Item.swift Rejection.swift RejectionCode.swift SignedDataKind.swift \
	NotificationType.swift) \
	$(addprefix Sources/TxRecon/Support/,JSONValue.swift JSONStringScan.swift ByteWord.swift StringBytes.swift \
	SHA256Digest.swift Base64.swift Base64URL.swift) \
	Tests/Fuzz/InputDecoderFuzzer.swift

.build/fuzz/input-decoder: $(FUZZ_SOURCES)
	mkdir -p .build/fuzz
	swiftc -sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 -module-name TxReconFuzz \
	  -package-name txrecon -I Sources/CCrypto -lcrypto \
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

# Builds the release binary first; `install-files` alone installs what is built.
install: release
	@$(MAKE) --no-print-directory install-files

# The unit names /usr/bin/txrecon and /etc/txrecon: rewritten for other places.
install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
	  $(DESTDIR)$(LIBDIR)/systemd/system $(DESTDIR)$(LIBDIR)/systemd/catalog \
	  $(DESTDIR)$(LIBDIR)/tmpfiles.d $(DESTDIR)$(LIBDIR)/sysusers.d $(DESTDIR)$(SYSCONFDIR)/txrecon
	install -m 0755 $(RELEASE_BINARY) $(DESTDIR)$(BINDIR)/txrecon
	for unit in txrecon.service txrecon-sweep.service txrecon-reconcile.service txrecon-answer.service txrecon-receive.service; do \
	  sed -e 's|/usr/bin/txrecon|$(BINDIR)/txrecon|g' -e 's|/etc/txrecon/|$(SYSCONFDIR)/txrecon/|g' \
	    systemd/$$unit > $(DESTDIR)$(LIBDIR)/systemd/system/$$unit && \
	  chmod 0644 $(DESTDIR)$(LIBDIR)/systemd/system/$$unit || exit 1; \
	done
	install -m 0644 systemd/txrecon-sweep.timer $(DESTDIR)$(LIBDIR)/systemd/system/txrecon-sweep.timer
	install -m 0644 systemd/txrecon-reconcile.timer $(DESTDIR)$(LIBDIR)/systemd/system/txrecon-reconcile.timer
	install -m 0644 systemd/txrecon-answer.path $(DESTDIR)$(LIBDIR)/systemd/system/txrecon-answer.path
	install -m 0644 systemd/txrecon-answer.timer $(DESTDIR)$(LIBDIR)/systemd/system/txrecon-answer.timer
	install -m 0644 systemd/txrecon-receive.socket $(DESTDIR)$(LIBDIR)/systemd/system/txrecon-receive.socket
	install -m 0644 systemd/txrecon.tmpfiles $(DESTDIR)$(LIBDIR)/tmpfiles.d/txrecon.conf
	install -m 0644 systemd/txrecon.sysusers $(DESTDIR)$(LIBDIR)/sysusers.d/txrecon.conf
	install -m 0644 systemd/txrecon.catalog $(DESTDIR)$(LIBDIR)/systemd/catalog/txrecon.catalog
	install -m 0644 man/txrecon.8 $(DESTDIR)$(MANDIR)/man8/txrecon.8
	install -m 0644 man/txrecon.conf.5 $(DESTDIR)$(MANDIR)/man5/txrecon.conf.5
	install -m 0644 Config/AppleRootCA-G3.cer $(DESTDIR)$(DATADIR)/AppleRootCA-G3.cer
	install -m 0644 Config/AppleIncRootCertificate.cer $(DESTDIR)$(DATADIR)/AppleIncRootCertificate.cer
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/txrecon/txrecon.conf ]; then \
	  echo "kept the existing $(DESTDIR)$(SYSCONFDIR)/txrecon/txrecon.conf"; \
	else \
	  echo "install -m 0644 Config/txrecon.conf $(DESTDIR)$(SYSCONFDIR)/txrecon/txrecon.conf"; \
	  install -m 0644 Config/txrecon.conf $(DESTDIR)$(SYSCONFDIR)/txrecon/txrecon.conf; \
	fi
	@[ -n "$(DESTDIR)" ] || echo "now: systemd-sysusers; systemd-tmpfiles --create; journalctl --update-catalog;" \
	  "systemctl daemon-reload; set URL= in $(SYSCONFDIR)/txrecon/txrecon.conf; systemctl enable --now txrecon;" \
	  "once [Sweep] is set: systemctl enable --now txrecon-sweep.timer txrecon-reconcile.timer"\
	  "txrecon-answer.path txrecon-answer.timer;" \
	  "to receive over HTTP: systemctl enable --now txrecon-receive.socket"

# The package is staged with install-files, so it holds exactly what
# `make install` installs; maintainer scripts and control are in packaging/deb/.
deb: deps-systemd-test release
	rm -rf $(DEB_STAGE) $(DEB_STAGE).deb
	@$(MAKE) --no-print-directory install-files DESTDIR=$(CURDIR)/$(DEB_STAGE) PREFIX=/usr
	gzip -9n $(DEB_STAGE)/usr/share/man/man5/txrecon.conf.5 $(DEB_STAGE)/usr/share/man/man8/txrecon.8
	install -d -m 0755 $(DEB_STAGE)/DEBIAN
	install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm $(DEB_STAGE)/DEBIAN/
	install -m 0644 packaging/deb/conffiles $(DEB_STAGE)/DEBIAN/conffiles
	shlibs="$$(packaging/deb/shlibs-depends $(DEB_STAGE)/usr/bin/txrecon)" && [ -n "$$shlibs" ] && \
	sed -e 's/@VERSION@/$(VERSION)/' -e 's/@ARCH@/$(DEB_ARCH)/' -e "s/@SHLIBS_DEPENDS@/$$shlibs/" \
	  -e "s/@INSTALLED_SIZE@/$$(du -sk --exclude=DEBIAN $(DEB_STAGE) | cut -f1)/" \
	  packaging/deb/control.in > $(DEB_STAGE)/DEBIAN/control
	dpkg-deb --root-owner-group -Zxz --build $(DEB_STAGE) $(DEB_STAGE).deb

check-docs: deps-docs
	Tests/systemd/check-docs.sh

# Needs root: boots systemd in containers (see the script's header).
systemd-test: deps-systemd-test check-docs release deb
	Tests/systemd/run.sh

# Needs root (nginx's workers run as nobody): docs/receive.md's nginx snippet in
# front of the receiver, TLS from a throw-away CA (see the script's header).
nginx-test: build
	Tests/nginx/run.sh

# The benchmark (issue 6): builds the release binary, runs it against nginx
# on 127.0.0.1 (fetched from Debian when missing), prints a Markdown table
# and writes it to bench/results.md. About 15 minutes; pass options with
# BENCH_FLAGS, e.g. BENCH_FLAGS="--runs 5" or "--only drain,latency"
# (python3 bench/bench.py --help lists them). bench-long drains 1,000,000
# items for the RSS measurement instead of 200,000; bench-profile records one
# drain with perf (linux-perf) into .build/bench/profile.txt; bench-journal
# (root) measures the drain with the daemon logging to a journald of its own,
# as under systemd, against the same drain logging to a file.
BENCH_FLAGS ?=

bench: deps
	python3 bench/bench.py $(BENCH_FLAGS)

bench-long: deps
	python3 bench/bench.py --long $(BENCH_FLAGS)

bench-profile: deps
	python3 bench/bench.py --only profile $(BENCH_FLAGS)

bench-journal: deps
	python3 bench/bench.py --only journal $(BENCH_FLAGS)

# Instructions per delivered envelope, counted by callgrind (bench/instructions.py):
# the release binary, and each of REFERENCES (release binaries of other commits,
# e.g. .build/bench/reference-COMMIT/.build/release/txrecon), alternated run by run.
# Far steadier than CPU time on a shared host; minutes per run.
REFERENCES ?=

bench-instructions: deps release
	command -v valgrind >/dev/null || apt-get install -y --no-install-recommends valgrind
	python3 bench/instructions.py $(CURDIR)/.build/release/txrecon $(REFERENCES)
