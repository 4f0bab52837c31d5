import Dispatch
import Foundation

/// Ends the process when a command overruns its time limit by `grace`,
/// whatever its tasks are doing: the limit is enforced by tasks that may wait
/// behind busy actors (a hostile offer once kept `carrier rtc --timeout 5`
/// working for 28 s). Runs on a dispatch queue of its own.
enum Watchdog {
    static func arm(after limit: Duration, grace: Duration = .seconds(3), what: String) {
        let seconds = (limit + grace).inSeconds
        DispatchQueue(label: "carrier-watchdog").asyncAfter(deadline: .now() + seconds) {
            FileHandle.standardError.write(
                Data("error: \(what) still busy \(grace) after its \(limit) limit; exiting\n".utf8))
            exit(1)
        }
    }
}
