import Foundation
import FuzzTargets

// The libFuzzer driver for every fuzz target (`FuzzTargets`), built only by
// `make fuzz` (CARRIER_FUZZ=1 and -sanitize=fuzzer,address). The target is
// chosen with FUZZ_TARGET=NAME; the arguments are libFuzzer's.

typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzCallback
) -> Int32

let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
guard let target = FuzzTargets.named(name) else {
    let names = FuzzTargets.all.map(\.name).joined(separator: ", ")
    FileHandle.standardError.write(Data("set FUZZ_TARGET to one of: \(names)\n".utf8))
    exit(2)
}
nonisolated(unsafe) var selected: (@Sendable ([UInt8]) -> Void)? = target
let callback: FuzzCallback = { data, count in
    guard let data else { return 0 }
    selected?(Array(UnsafeBufferPointer(start: data, count: count)))
    return 0
}
var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runDriver(&argc, &argv, callback))
