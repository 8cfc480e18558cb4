import Configuration
import Foundation
import JWS
import Synchronization

/// Reads settings by name (`port`, `body-limit`, ...) through swift-configuration from, in order: command-line flags,
/// `COUNTERSIGN_*` environment variables (`body-limit` is `COUNTERSIGN_BODY_LIMIT`; lists are comma-separated) and a
/// JSON config file. A value that does not convert or is out of range is refused with the source it came from and
/// what is expected; a config-file key that no setting read is refused as unknown.
package struct SettingsReader {
    /// A JSON config file, read once.
    package struct ConfigFile: Sendable {
        /// Its path, as given.
        let path: String
        /// swift-configuration's provider over it.
        let provider: FileProvider<JSONSnapshot>
        /// Its top-level keys, to refuse names no setting reads.
        let keys: [String]

        /// Reads the file at `path`; an unreadable or malformed file is a usage error naming it.
        package static func read(_ path: String) async throws(CLIFailure) -> ConfigFile {
            guard let data = FileManager.default.contents(atPath: path) else { throw CLIFailure.usage("cannot read config file \(path)") }
            guard let object = (try? JSONParser.parse(Array(data)))?.object else { throw CLIFailure.usage("\(path) is not a JSON object") }
            do {
                let provider = try await FileProvider<JSONSnapshot>(filePath: .init(path))
                return ConfigFile(path: path, provider: provider, keys: object.members.map(\.key))
            } catch {
                throw CLIFailure.usage("\(path): \(error)")
            }
        }
    }

    private let reader: ConfigReader
    private let sourceNames: [(String) -> String]
    private let accesses = AccessLog()
    private let file: ConfigFile?
    private var namesRead: Set<String> = []

    /// Settings from the command line's `arguments` (`--NAME VALUE`, `--NAME=VALUE`, a switch alone, a list's flag
    /// repeated), then `environment`, then `file`. Every flag must be one of `settings`' (a misspelt one would otherwise
    /// be ignored), and each takes what its setting takes.
    package init(arguments: [String], settings: [Setting], environment: [String: String], file: ConfigFile? = nil) throws(CLIFailure) {
        let flags = Dictionary(settings.map { ($0.flag, $0) }, uniquingKeysWith: { first, _ in first })
        // The texts given for each setting, in order; the flags are read here, so values are taken as typed (a comma
        // in a path or a password stays in it) and a list's flag may be repeated.
        var given: [(setting: Setting, texts: [String])] = []
        var waiting = false
        for argument in arguments {
            guard argument.hasPrefix("--") else {
                guard waiting, let last = given.last else {
                    throw CLIFailure.usage("unexpected argument \(Self.quoted(argument)); settings are given as --NAME VALUE")
                }
                given[given.count - 1].texts.append(argument)
                if !last.setting.repeatable { waiting = false }
                continue
            }
            if waiting, let last = given.last, last.texts.isEmpty {
                throw CLIFailure.usage("--\(last.setting.flag) needs a value (\(last.setting.value ?? ""))")
            }
            let flag = String(argument.dropFirst(2).prefix { $0 != "=" })
            guard let setting = flags[flag] else {
                throw CLIFailure.usage("unknown option --\(flag); `countersign serve --help` lists the settings")
            }
            let inline = argument.firstIndex(of: "=").map { String(argument[argument.index(after: $0)...]) }
            given.append((setting, inline.map { [$0] } ?? []))
            waiting = inline == nil && setting.value != nil
        }
        if waiting, let last = given.last, last.texts.isEmpty {
            throw CLIFailure.usage("--\(last.setting.flag) needs a value (\(last.setting.value ?? ""))")
        }
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for setting in settings {
            let texts = given.filter { $0.setting.name == setting.name }.flatMap(\.texts)
            guard given.contains(where: { $0.setting.name == setting.name }) else { continue }
            values[AbsoluteConfigKey([setting.name])] = ConfigValue(try setting.content(texts), isSecret: false)
        }
        let flagNames = Dictionary(settings.map { ($0.name, $0.flag) }, uniquingKeysWith: { first, _ in first })
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: values),
            EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "countersign"),
        ]
        var sourceNames: [(String) -> String] = [{ "--" + (flagNames[$0] ?? $0) }, Self.environmentName]
        if let file {
            providers.append(file.provider)
            sourceNames.append { "\(file.path) \"\($0)\"" }
        }
        self.file = file
        self.sourceNames = sourceNames
        reader = ConfigReader(providers: providers, accessReporter: accesses)
    }

    /// The environment variable that sets `name`.
    static func environmentName(_ name: String) -> String {
        "COUNTERSIGN_" + name.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
    }

    /// An integer in `range`.
    mutating func int(_ name: String, in range: ClosedRange<Int>) throws(CLIFailure) -> Int? {
        try read(name, expected: "an integer from \(range.lowerBound) to \(range.upperBound)", { $0.int(forKey: $1) }) { range.contains($0) }
    }

    /// A number of seconds (or other amount) that `isValid` accepts, described by `expected`.
    mutating func double(_ name: String, expected: String, where isValid: (Double) -> Bool) throws(CLIFailure) -> Double? {
        try read(name, expected: expected, { $0.double(forKey: $1) }, isValid: isValid)
    }

    /// `true` or `false` (also `1`/`0`, `yes`/`no` in the environment).
    mutating func bool(_ name: String) throws(CLIFailure) -> Bool? {
        try read(name, expected: "true or false", { $0.bool(forKey: $1) })
    }

    /// Text that `isValid` accepts.
    mutating func string(_ name: String, expected: String = "text", where isValid: (String) -> Bool = { _ in true }) throws(CLIFailure) -> String? {
        try read(name, expected: expected, { $0.string(forKey: $1) }, isValid: isValid)
    }

    /// Secret text (kept out of access logs) that `problem` finds nothing wrong with; its answer ends the message.
    mutating func secret(_ name: String, expected: String, problem: (String) -> String?) throws(CLIFailure) -> String? {
        try read(name, expected: expected, { $0.string(forKey: $1, isSecret: true) }, problem: problem)
    }

    /// One of an enumeration's raw values.
    mutating func choice<Value: RawRepresentable<String> & CaseIterable>(_ name: String, as type: Value.Type) throws(CLIFailure) -> Value? {
        try read(name, expected: Value.allCases.map(\.rawValue).joined(separator: ", "), { $0.string(forKey: $1, as: Value.self) })
    }

    /// A list of text values.
    mutating func list(_ name: String) throws(CLIFailure) -> [String]? {
        try read(name, expected: "a list of text values", { $0.stringArray(forKey: $1) })
    }

    /// Refuses config-file keys that no setting read; call after reading every setting.
    func refuseUnknownFileKeys() throws(CLIFailure) {
        guard let file, let unknown = file.keys.first(where: { !namesRead.contains($0) }) else { return }
        throw CLIFailure.usage("\(file.path): unknown setting \"\(unknown)\"; the settings are listed in docs/operations.md")
    }

    private mutating func read<Value>(_ name: String, expected: String, _ get: (ConfigReader, ConfigKey) -> Value?,
                                      isValid: (Value) -> Bool = { _ in true }) throws(CLIFailure) -> Value? {
        try read(name, expected: expected, get) { value in isValid(value) ? nil : "\(Self.quoted(value)); expected \(expected)" }
    }

    private mutating func read<Value>(_ name: String, expected: String, _ get: (ConfigReader, ConfigKey) -> Value?,
                                      problem: (Value) -> String?) throws(CLIFailure) -> Value? {
        namesRead.insert(name)
        let value = get(reader, ConfigKey([name]))
        guard let event = accesses.take(), !event.providerResults.isEmpty else { return value }
        let source = sourceNames[min(event.providerResults.count, sourceNames.count) - 1](name)
        let failed: Bool
        if case .failure = event.providerResults.last?.result { failed = true } else { failed = event.conversionError != nil }
        if failed { throw CLIFailure.usage("\(source): invalid \(name); expected \(expected)") }
        if let value, let problem = problem(value) { throw CLIFailure.usage("\(source): invalid \(name) \(problem)") }
        return value
    }

    private static func quoted<Value>(_ value: Value) -> String {
        value is String ? "\"\(value)\"" : "\(value)"
    }

    /// Keeps the last access event, so a read can tell which source answered.
    private final class AccessLog: AccessReporter {
        private let last = Mutex<AccessEvent?>(nil)

        func report(_ event: AccessEvent) {
            last.withLock { $0 = event }
        }

        func take() -> AccessEvent? {
            last.withLock { event in
                defer { event = nil }
                return event
            }
        }
    }
}
