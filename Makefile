# Every target installs what is missing first (scripts/setup.sh is idempotent and quick when all is there).
SWIFT ?= swift

.PHONY: setup build test demo bench soak sanitize fuzz fuzz-smoke docs format clean

setup:
	@bash scripts/setup.sh

build: setup
	$(SWIFT) build

# First, that every import of a module of this package is declared in
# Package.swift (scripts/check_imports.py). Then every test, in the groups of
# scripts/test_groups.py (one `swift test` each, so the timing-sensitive
# suites do not share the two cores with the heavy ones; it checks first that
# every test is in exactly one group): pure and single-layer tests (with the
# fuzz corpus replayed through every parser); SCTP (usrsctp is process-wide);
# peer connections, real-time media and call clients (with network faults from
# a userspace UDP relay: blackouts, loss, NAT rebinding); 30 calls alone in a
# process, counting threads, descriptors and heap; sessions; real toxcore nodes
# on 127.0.0.1 in three runs, each with its own local network (on two cores,
# the file transfers, the Express suites and the rest at once made friend links
# take over a minute to come up); the carrier executable and the samples;
# interop with aiortc, Chromium and coturn (slow). Then 51 calls into a bot from
# callers that are each a new process (three at once; the bot must stay
# reachable, past the 37th call where it once fell off the network); the network lab (scripts/netlab.py: namespaces, NAT routers, and
# on its public network coturn over UDP, TCP and TLS, a bootstrap node and an
# Express node; `carrier rtc` and aiortc across each NAT case each way, then
# calls between friends over the node in each case each way and through three
# faults mid-call; friends finding each other behind NATs (ours; make bench
# adds raw toxcore beside it); about six minutes); then the fuzzers, built with
# libFuzzer and AddressSanitizer, over their seed corpus (fuzz-smoke, about a
# minute).
test: setup
	python3 scripts/check_imports.py
	python3 scripts/target_graph.py check
	$(SWIFT) build --build-tests
	python3 scripts/test_groups.py check
	python3 scripts/timed.py python3 scripts/test_groups.py run
	CALLS=51 CALLERS=3 LIMIT_KB=4096 python3 scripts/timed.py python3 scripts/soak_callers.py .build/debug/carrier
	python3 scripts/timed.py python3 Tests/Lab/lab_rtc.py .build/debug/carrier
	python3 scripts/timed.py python3 Tests/Lab/lab_calls.py .build/debug/carrier
	LAB_NODE_RAW=0 python3 scripts/timed.py python3 Tests/Lab/lab_node.py .build/debug/carrier
	python3 scripts/timed.py $(MAKE) --no-print-directory fuzz-smoke

# The release binary carries the Swift runtime and Foundation inside it: it runs
# on a machine without a Swift toolchain, and each process starts ~7 ms faster
# (fewer libraries to map and symbols to bind; measured). The link prints one
# warning about mktemp: it comes from Foundation's static library, not from us.
RELEASE = -c release --static-swift-stdlib

demo: setup
	$(SWIFT) build $(RELEASE) --product carrier
	.build/release/carrier demo

bench: setup
	$(SWIFT) build $(RELEASE) --product carrier
	$(SWIFT) build $(RELEASE) --product express-load
	bash scripts/bench.sh .build/release/carrier
	python3 scripts/bench_transport.py .build/release/carrier
	python3 scripts/bench_media.py .build/release/carrier
	python3 scripts/bench_friend_file.py .build/release/carrier
	python3 scripts/bench_forward.py .build/release/carrier
	python3 scripts/bench_calls.py .build/release/carrier
	python3 scripts/bench_concurrency.py .build/release/carrier
	python3 scripts/bench_lab.py .build/release/carrier
	python3 scripts/bench_remb.py .build/release/carrier
	python3 scripts/bench_congestion.py .build/release/carrier
	python3 scripts/bench_express.py .build/release/carrier .build/release/express-load

# A long-running node that short-lived peers come to and leave (PEERS each,
# default 200): new identities that befriend it, then one identity started
# again and again to message it. Reports the seconds each took to reach it.
# Then an answering bot that takes CALLS calls one after another (files,
# Ctrl-C, callers killed mid-call) must end with the threads, descriptors and
# heap it had after ten (scripts/soak_calls.py); then CALLS calls from a
# caller that is a new process each time, and SOAK_MINUTES of two such callers
# (scripts/soak_callers.py): every call must connect, the bot stay reachable.
PEERS ?= 200
CALLS ?= 200
SOAK_MINUTES ?= 60
soak: setup
	$(SWIFT) build $(RELEASE) --product carrier
	PEERS=$(PEERS) MODE=new python3 scripts/soak_reachability.py .build/release/carrier
	PEERS=$(PEERS) MODE=same python3 scripts/soak_reachability.py .build/release/carrier
	CALLS=$(CALLS) python3 scripts/soak_calls.py .build/release/carrier
	CALLS=$(CALLS) python3 scripts/soak_callers.py .build/release/carrier
	MINUTES=$(SOAK_MINUTES) CALLERS=2 python3 scripts/soak_callers.py .build/release/carrier
	$(MAKE) --no-print-directory sanitize

# Fuzzing: libFuzzer with AddressSanitizer over every parser of network bytes
# (Sources/FuzzTargets). `make fuzz` runs each target for FUZZ_SECONDS (default
# 60) from a copy of the seed corpus (Fuzz/corpus; new inputs stay in
# .build/fuzz-corpus) and prints executions per target; crashes land in
# .build/fuzz-crashes; FUZZ_RUNS=N runs N executions per target instead.
# `make fuzz-smoke` runs every target over its seeds only (part of make test).
FUZZ_SECONDS ?= 60
FUZZ_BUILD = CARRIER_FUZZ=1 $(SWIFT) build -c release --product carrier-fuzz --scratch-path .build/fuzz \
	-Xswiftc -sanitize=fuzzer,address -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld

# Nodes stopped at every point of their life (NodeStopTests) under
# AddressSanitizer, where a call into a freed toxcore aborts the run; part of
# make test. Leaks are not counted here (a shared test node's event streams
# live until exit); the soaks measure the heap. ThreadSanitizer: SANITIZER=thread.
SANITIZER ?= address
STOP_ROUNDS ?= 2
sanitize: setup
	$(SWIFT) build --build-tests -Xswiftc -sanitize=$(SANITIZER) --scratch-path .build/$(SANITIZER)
	ASAN_OPTIONS=detect_leaks=0 STOP_ROUNDS=$(STOP_ROUNDS) $(SWIFT) test -Xswiftc -sanitize=$(SANITIZER) \
		--scratch-path .build/$(SANITIZER) --filter NodeStopTests

fuzz: setup
	$(FUZZ_BUILD)
	bash scripts/fuzz.sh .build/fuzz/release/carrier-fuzz $(FUZZ_SECONDS)

fuzz-smoke: setup
	$(FUZZ_BUILD)
	bash scripts/fuzz.sh .build/fuzz/release/carrier-fuzz 0

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

clean:
	rm -rf .build

# API documentation with DocC, one archive per library module in .build/docs,
# and how much of each module's public API has a doc comment.
docs: setup
	scripts/docs.sh
