# Every target installs what is missing first (scripts/setup.sh is idempotent and quick when all is there).
SWIFT ?= swift

.PHONY: setup build test demo bench format clean

setup:
	@bash scripts/setup.sh

build: setup
	$(SWIFT) build

# Every test, in separate runs so the timing-sensitive suites do not share the
# two cores with the heavy ones: pure and single-layer tests; SCTP (usrsctp is
# process-wide); peer connections, real-time media and call clients in one process; real toxcore nodes on
# 127.0.0.1; the carrier executable; interop with aiortc and coturn (slow).
test: setup
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip NodeNetworkTests --skip CLITests --skip InteropTests --skip RtcSCTPTests --skip RtcPeerTests --skip MediaCallTests --skip CallClientTests
	$(SWIFT) test --filter RtcSCTPTests
	$(SWIFT) test --filter "RtcPeerTests|MediaCallTests|CallClientTests"
	$(SWIFT) test --filter NodeNetworkTests
	$(SWIFT) test --filter CLITests
	$(SWIFT) test --filter InteropTests

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
	bash scripts/bench.sh .build/release/carrier
	python3 scripts/bench_transport.py .build/release/carrier
	python3 scripts/bench_media.py .build/release/carrier
	python3 scripts/bench_friend_file.py .build/release/carrier

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

clean:
	rm -rf .build
