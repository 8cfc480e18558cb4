import Foundation

/// Where the store lives, from `--database`: a file path (SQLite) or a `postgres://` URL (PostgreSQL).
public enum DatabaseLocation: Sendable, Equatable, CustomStringConvertible {
    /// An SQLite file.
    case sqlite(path: String)
    /// A PostgreSQL server.
    case postgres(PostgresLocation)

    /// Parses a `--database` value: `postgres://` or `postgresql://` URLs select PostgreSQL, anything else is a file path.
    public init(_ text: String) throws(DatabaseLocationError) {
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(try PostgresLocation(url: text))
        } else if text.isEmpty {
            throw DatabaseLocationError(message: "is empty; give a file path or a postgres:// URL")
        } else {
            self = .sqlite(path: text)
        }
    }

    /// The location with any password hidden, for logs.
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let location): location.description
        }
    }
}

/// Why a `--database` value was refused.
public struct DatabaseLocationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong and what to give instead.
    public let message: String
    public var description: String { message }
}

/// A PostgreSQL server and database: `postgres://user[:password]@host[:port]/database[?host=/socket/dir&sslmode=require]`.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    /// The TCP host, when not a Unix socket.
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The directory holding the server's Unix socket (`?host=/dir`, as libpq writes it), if any.
    public var socketDirectory: String?
    /// The user to connect as.
    public var user: String
    /// The password, if any.
    public var password: String?
    /// The database name.
    public var database: String
    /// Whether TLS is required (`sslmode=require`); otherwise the connection is plain (use a Unix socket or a private network).
    public var requireTLS: Bool

    /// Parses a `postgres://` URL.
    public init(url text: String) throws(DatabaseLocationError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme) else {
            throw DatabaseLocationError(message: "is not a valid URL; use postgres://user@host:port/database")
        }
        guard let user = components.user, !user.isEmpty else {
            throw DatabaseLocationError(message: "has no user; use postgres://user@host:port/database")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw DatabaseLocationError(message: "has no database name; use postgres://user@host:port/database")
        }
        self.user = user.removingPercentEncoding ?? user
        password = components.password.map { $0.removingPercentEncoding ?? $0 }
        self.database = database.removingPercentEncoding ?? database
        host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        port = components.port ?? 5432
        socketDirectory = nil
        requireTLS = false
        for item in components.queryItems ?? [] {
            switch (item.name, item.value ?? "") {
            case ("host", let value) where value.hasPrefix("/"): socketDirectory = value
            case ("sslmode", "disable"), ("sslmode", "prefer"), ("sslmode", "allow"): requireTLS = false
            case ("sslmode", "require"): requireTLS = true
            case ("application_name", _), ("connect_timeout", _): continue
            default:
                throw DatabaseLocationError(message: "has an unsupported parameter \(item.name)=\(item.value ?? ""); use host=/socket/directory or sslmode=disable|require")
            }
        }
        if requireTLS, socketDirectory != nil {
            throw DatabaseLocationError(message: "asks for TLS over a Unix socket; drop sslmode=require or the host= parameter")
        }
    }

    /// The Unix socket file, when connecting through one.
    public var socketPath: String? { socketDirectory.map { "\($0)/.s.PGSQL.\(port)" } }

    /// The URL with the password replaced by `***`.
    public var description: String {
        let credentials = user + (password == nil ? "" : ":***")
        let socket = socketDirectory.map { "?host=\($0)" } ?? ""
        return "postgres://\(credentials)@\(socketDirectory == nil ? host : ""):\(port)/\(database)\(socket)"
    }
}
