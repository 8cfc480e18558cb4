import Foundation

/// The permissions of the files and directories Countersign creates (the database and its WAL, backups, keys, exports):
/// the process's umask, `077` unless `COUNTERSIGN_UMASK` says otherwise, so they are the owner's alone (0600 and 0700);
/// the database holds tokens' hashes, API key hashes and every body received. SQLite gives the WAL and shared-memory
/// files the database file's own permissions.
package enum FileModes {
    /// The umask used when the environment names none.
    static let defaultMask: mode_t = 0o077

    /// Sets the process umask from `COUNTERSIGN_UMASK` (octal, such as `027`), else ``defaultMask``.
    package static func apply(_ environment: [String: String]) throws(CLIFailure) {
        umask(try mask(environment["COUNTERSIGN_UMASK"]))
    }

    /// The mask `text` names (octal, 000 to 777), or the default for nil.
    static func mask(_ text: String?) throws(CLIFailure) -> mode_t {
        guard let text else { return defaultMask }
        guard !text.isEmpty, text.count <= 4, let value = mode_t(text, radix: 8), value <= 0o777 else {
            throw CLIFailure.usage("COUNTERSIGN_UMASK: invalid umask \"\(text)\"; expected octal such as 077 (files 0600) or 027 (files 0640)")
        }
        return value
    }
}
