import Foundation
import Testing

@testable import CarrierLog

/// LogSettings is process-wide: the tests run one after another.
@Suite(.serialized) struct LoggerTests {
    final class Captured: @unchecked Sendable {
        let lock = NSLock()
        var lines: [String] = []
        func add(_ line: String) { lock.withLock { lines.append(line) } }
        var all: [String] { lock.withLock { lines } }
    }

    func capture(level: LogLevel, _ body: () -> Void) -> [String] {
        let captured = Captured()
        LogSettings.setSink { level, subsystem, message in captured.add("\(level) \(subsystem): \(message)") }
        let previous = LogSettings.level
        LogSettings.level = level
        body()
        LogSettings.level = previous
        LogSettings.resetSink()
        return captured.all
    }

    @Test func linesAtOrAboveTheLevelAreWrittenWithTheirSubsystem() {
        let log = Logger("ice")
        let lines = capture(level: .info) {
            log.debug("not shown")
            log.info("pair selected")
            log.warning("consent lost")
            log.error("failed")
        }
        #expect(lines == ["info ice: pair selected", "warning ice: consent lost", "error ice: failed"])
    }

    @Test func messagesBelowTheLevelAreNotBuilt() {
        final class Counter: @unchecked Sendable { var built = 0 }
        let counter = Counter()
        func expensive() -> String {
            counter.built += 1
            return "x"
        }
        _ = capture(level: .warning) { Logger("node").debug(expensive()) }
        #expect(counter.built == 0)
    }

    @Test func levelsParseFromTheirNames() {
        #expect(LogLevel("DEBUG") == .debug && LogLevel("warning") == .warning && LogLevel("loud") == nil)
        #expect(LogLevel.error < .debug)
    }
}
