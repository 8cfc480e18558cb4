import CFuzzDriver
import Foundation

// `countersign-fuzz` runs one target from ``FuzzTargets`` under libFuzzer: COUNTERSIGN_FUZZ_TARGET names it, and every
// argument goes to libFuzzer. scripts/fuzz builds it with coverage instrumentation and runs each target.
let name = ProcessInfo.processInfo.environment["COUNTERSIGN_FUZZ_TARGET"] ?? ""
guard let target = FuzzTargets.all[name] else {
    FileHandle.standardError.write(Data("countersign-fuzz: set COUNTERSIGN_FUZZ_TARGET to one of \(FuzzTargets.all.keys.sorted().joined(separator: ", "))\n".utf8))
    exit(2)
}
nonisolated(unsafe) var selected: @Sendable ([UInt8]) -> Void = target
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
let status = countersign_run_fuzzer(&argc, &argv) { data, size in
    selected(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
if status == -1 {
    FileHandle.standardError.write(Data("countersign-fuzz: built without libFuzzer; run scripts/fuzz\n".utf8))
    exit(2)
}
exit(status)
