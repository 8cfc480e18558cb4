import Configuration

/// One `serve` setting, declared once: its name (the config-file key; the environment variable is `COUNTERSIGN_` and
/// the name in capitals, the flag `--` and the name unless ``flag`` says otherwise), what its value is, one line of
/// help, and how it is read into ``ServerSettings``. The default is the value ``ServerSettings()`` holds, so help and
/// docs/operations.md show what the server uses (a test holds the docs' table against these declarations).
package struct Setting {
    /// The setting's name: the config-file key, and the flag and environment variable derived from it.
    package let name: String
    /// The flag, without its dashes, when it is not the name (`key` for `keys`: `--key KID=PEM` is repeated).
    package let flag: String
    /// What the flag takes, as help writes it (`SECONDS`, `N`); nil for a switch, which takes nothing.
    package let value: String?
    /// What its value is, so a flag's text becomes the value swift-configuration holds (``content(_:)``).
    let kind: Kind
    /// Whether the flag may be given more than once (a list).
    package let repeatable: Bool
    /// One line of help.
    package let help: String
    /// The default as help and docs write it, from the defaults `ServerSettings()` holds; nil when there is none.
    package let defaultText: (ServerSettings) -> String?
    /// Reads the setting from `source` into `settings`, leaving the default when no source sets it.
    let read: (inout ServerSettings, inout SettingsReader) throws(CLIFailure) -> Void

    /// What a setting's value is.
    enum Kind {
        case integer, number, text, toggle, list
    }

    /// The value of the flag given as `texts` (the last one for a setting that is not a list), or why it is not one.
    func content(_ texts: [String]) throws(CLIFailure) -> ConfigContent {
        let text = texts.last ?? ""
        switch kind {
        case .integer:
            guard let integer = Int(text) else { throw CLIFailure.usage("--\(flag): invalid \(name) \"\(text)\"; expected a whole number") }
            return .int(integer)
        case .number:
            guard let number = Double(text) else { throw CLIFailure.usage("--\(flag): invalid \(name) \"\(text)\"; expected a number") }
            return .double(number)
        case .text: return .string(text)
        case .toggle: return .bool(true)
        case .list: return .stringArray(texts)
        }
    }

    /// The environment variable that sets it.
    package var environmentVariable: String { SettingsReader.environmentName(name) }

    /// Its lines in `serve --help`: the flag with its default, then the help, indented.
    package var helpLine: String {
        let usage = "  --\(flag)" + (value.map { " <\($0)>" } ?? "") + (repeatable ? " ..." : "")
        return usage + (defaultText(ServerSettings()).map { "  (default \($0))" } ?? "") + "\n        " + help
    }
}

extension Setting {
    /// A whole number in `range`.
    static func integer(_ name: String, _ path: WritableKeyPath<ServerSettings, Int>, in range: ClosedRange<Int>, value: String = "N",
                        help: String) -> Setting {
        Setting(name: name, flag: name, value: value, kind: .integer, repeatable: false, help: help, defaultText: { String($0[keyPath: path]) }) { settings, source throws(CLIFailure) in
            if let read = try source.int(name, in: range) { settings[keyPath: path] = read }
        }
    }

    /// A number (seconds, days, a rate) that `isValid` accepts, described by `expected`.
    static func number(_ name: String, _ path: WritableKeyPath<ServerSettings, Double>, expected: String, value: String = "SECONDS",
                       where isValid: @escaping (Double) -> Bool, help: String) -> Setting {
        Setting(name: name, flag: name, value: value, kind: .number, repeatable: false, help: help, defaultText: { Self.number($0[keyPath: path]) }) { settings, source throws(CLIFailure) in
            if let read = try source.double(name, expected: expected, where: isValid) { settings[keyPath: path] = read }
        }
    }

    /// Text that `isValid` accepts, described by `expected`.
    static func text(_ name: String, _ path: WritableKeyPath<ServerSettings, String>, value: String, expected: String = "text",
                     where isValid: @escaping (String) -> Bool = { _ in true }, help: String) -> Setting {
        Setting(name: name, flag: name, value: value, kind: .text, repeatable: false, help: help, defaultText: { $0[keyPath: path] }) { settings, source throws(CLIFailure) in
            if let read = try source.string(name, expected: expected, where: isValid) { settings[keyPath: path] = read }
        }
    }

    /// Text with no default.
    static func optionalText(_ name: String, _ path: WritableKeyPath<ServerSettings, String?>, value: String, help: String) -> Setting {
        Setting(name: name, flag: name, value: value, kind: .text, repeatable: false, help: help, defaultText: { _ in nil }) { settings, source throws(CLIFailure) in
            if let read = try source.string(name) { settings[keyPath: path] = read }
        }
    }

    /// One of an enumeration's raw values.
    static func choice<Value: RawRepresentable<String> & CaseIterable>(_ name: String, _ path: WritableKeyPath<ServerSettings, Value>,
                                                                       help: String) -> Setting {
        let value = Value.allCases.map(\.rawValue).joined(separator: "|")
        return Setting(name: name, flag: name, value: value, kind: .text, repeatable: false, help: help, defaultText: { $0[keyPath: path].rawValue }) { settings, source throws(CLIFailure) in
            if let read = try source.choice(name, as: Value.self) { settings[keyPath: path] = read }
        }
    }

    /// A switch: off unless given (`--name`, or `true`/`false` from the environment and the file).
    static func toggle(_ name: String, _ path: WritableKeyPath<ServerSettings, Bool>, help: String) -> Setting {
        Setting(name: name, flag: name, value: nil, kind: .toggle, repeatable: false, help: help, defaultText: { $0[keyPath: path] ? "on" : nil }) { settings, source throws(CLIFailure) in
            if let read = try source.bool(name) { settings[keyPath: path] = read }
        }
    }

    /// A list: the flag repeated, comma-separated in the environment, an array in the file.
    static func list(_ name: String, _ path: WritableKeyPath<ServerSettings, [String]>, flag: String? = nil, value: String,
                     help: String) -> Setting {
        Setting(name: name, flag: flag ?? name, value: value, kind: .list, repeatable: true, help: help, defaultText: { _ in nil }) { settings, source throws(CLIFailure) in
            if let read = try source.list(name) { settings[keyPath: path] = read }
        }
    }

    /// A number as help and the docs write it: whole numbers without a fraction.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
