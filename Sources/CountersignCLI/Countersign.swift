import CountersignServer
import ArgumentParser
import Foundation

/// The `countersign` command line.
struct Countersign: AsyncParsableCommand {
    /// This build's version, printed by `countersign --version` and in the startup log.
    static let version = CountersignVersion.current

    static let configuration = CommandConfiguration(
        commandName: "countersign",
        abstract: "Receive, verify, store and report Apple's ad-attribution postbacks.",
        version: Countersign.version,
        subcommands: [
            ServeCommand.self, VerifyCommand.self, KeysCommand.self, ImpressionCommand.self,
            SimulateCommand.self, ReverifyCommand.self, SchemaCommand.self, RedecodeCommand.self, APIKeyCommand.self, AdvertiserCommand.self, ReportCommand.self, ExportCommand.self, PullCommand.self, PerformanceCommand.self, CohortsCommand.self, ReconcileCommand.self, SpendCommand.self,
            AdServicesCommand.self, NamesCommand.self, CopyCommand.self, BackupCommand.self, AppsCommand.self, ForwardCommand.self, AlertsCommand.self, SetupCommand.self, SigningCommand.self,
        ]
    )
}

/// Entry point: exit codes are 0 success, 1 a negative answer, 2 a usage error (ArgumentParser's own 64 becomes 2).
@main
enum Main {
    static func main() async {
        do {
            try FileModes.apply(ProcessInfo.processInfo.environment)
            var command = try Countersign.parseAsRoot()
            if let asyncCommand = command as? any AsyncParsableCommand {
                try await StoreRunner.running(asyncCommand)
            } else {
                try command.run()
            }
        } catch let failure as CLIFailure {
            if !failure.message.isEmpty { FileHandle.standardError.write(Data(("countersign: " + failure.message + "\n").utf8)) }
            exit(failure.code)
        } catch {
            let code = Countersign.exitCode(for: error)
            if code == .success || code == .failure && error is ExitCode {
                Countersign.exit(withError: error)
            }
            FileHandle.standardError.write(Data((Countersign.fullMessage(for: error) + "\n").utf8))
            exit(2)
        }
    }
}

/// Where the pinned keys come from: the key directory plus `--key` additions.
struct KeyOptions: ParsableArguments {
    @Option(name: .customLong("keys-dir"), help: "Directory of extra or overriding key PEM files; Apple's keys are built in (default: $COUNTERSIGN_KEYS_DIR or ./keys, if present, as serve).")
    var keysDirectory: String?

    @Option(name: .customLong("key"), help: ArgumentHelp("Trust an extra production key for this run (also $COUNTERSIGN_KEYS, as serve).", valueName: "KID=PEM_FILE"))
    var extraKeys: [String] = []
}
