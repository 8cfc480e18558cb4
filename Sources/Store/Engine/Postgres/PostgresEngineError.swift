import Foundation

/// Why the PostgreSQL engine could not serve a request.
enum PostgresEngineError: Error, CustomStringConvertible {
    /// Every connection stayed busy past the wait limit.
    case poolExhausted(Int)
    /// No connection came within the wait limit (seconds) while the pool had room and nobody else got one: the client
    /// could not open one.
    case unreachable(TimeInterval)
    /// The engine was closed.
    case closed
    /// A column had a type the store never uses.
    case unsupportedType(String)
    /// The server did not answer a statement in time; the connection was closed.
    case noAnswer(String, TimeInterval)
    /// The connection closed before the server answered a statement.
    case connectionLost(String)
    /// The server answered `COMMIT` by rolling the transaction back: a statement in it had failed.
    case rolledBack

    var description: String {
        switch self {
        case .poolExhausted(let size): "all \(size) PostgreSQL connections stayed busy; raise --database-pool or add capacity"
        case .unreachable(let seconds): "no PostgreSQL connection could be opened within \(Int(seconds.rounded(.up))) s though the pool had room: the server is down, cannot be reached or refuses connections (the pool's log says which)"
        case .closed: "the PostgreSQL engine is closed"
        case .unsupportedType(let type): "a result column has PostgreSQL type \(type), which the store does not read"
        case .noAnswer(let sql, let seconds): "PostgreSQL did not answer \(sql) within \(seconds) s; the connection was closed"
        case .connectionLost(let sql): "the connection to PostgreSQL closed before it answered \(sql)"
        case .rolledBack: "PostgreSQL rolled the transaction back at COMMIT: a statement in it had failed"
        }
    }
}
