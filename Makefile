# Every target installs what is missing first (scripts/setup.sh is idempotent and quick when all is there).
SWIFT ?= swift

.PHONY: setup build test demo bench format clean

setup:
	@bash scripts/setup.sh

build: setup
	$(SWIFT) build

# Unit tests, network tests on 127.0.0.1 (real toxcore nodes) and CLI tests.
test: setup
	$(SWIFT) build --build-tests
	$(SWIFT) test

demo: setup
	$(SWIFT) build -c release --product carrier
	.build/release/carrier demo

bench: setup
	$(SWIFT) build -c release --product carrier
	bash scripts/bench.sh .build/release/carrier

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

clean:
	rm -rf .build
