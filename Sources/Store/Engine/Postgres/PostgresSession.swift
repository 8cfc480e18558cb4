import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// One leased PostgreSQL connection as an ``SQLSession``.
struct PostgresSession: SQLSession {
    let pooled: PooledConnection
    let logger: Logger
    /// Seconds a statement may go unanswered before the connection is closed; `nil` waits for ever.
    let answerTimeout: TimeInterval?
    var dialect: SQLDialect { .postgres }
    var connection: PostgresConnection { pooled.connection }

    func insert(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int64? {
        try value(sql + " RETURNING id", arguments, as: Int64.self)
    }

    func execute(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> Int {
        try run(sql, arguments).metadata.rows ?? 0
    }

    /// A `.once` or `.cached` statement is unnamed and parsed each time, its argument types those of the values bound; a
    /// `.prepared` one is prepared on the connection the first time and only bound and run after that.
    func rows(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> [SQLRow] {
        try rowsAhead(sql, arguments, reuse: reuse)()
    }

    /// Hands each row's cells to `row` once the answer is read, lent from postgres-nio's rows (their columns' types
    /// checked first), without making a value of each.
    func forEachRow(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse, _ row: (SQLCells) throws -> Void) throws {
        let (rows, format) = try sendAhead(sql, arguments, reuse: reuse)()
        guard let first = rows.first else { return }
        _ = try Self.checkReadable(first)
        for each in rows { try row(SQLCells(postgres: Array(each), format: format)) }
    }

    /// `rows` as the store's rows, each cell read as `format` when given (else as described).
    private static func rows(_ rows: [PostgresRow], format: PostgresFormat?) throws -> [SQLRow] {
        guard let first = rows.first else { return [] }
        let columns = first.map(\.columnName)
        return try rows.map { row in
            SQLRow(columns: columns, values: try row.map { cell in
                var cell = cell
                cell.format = format ?? cell.format
                return try Self.value(cell)
            })
        }
    }

    /// Runs a statement, waiting for its answer at most the session's ``answerTimeout``.
    @discardableResult
    func run(_ sql: String, _ arguments: [any SQLValueConvertible]) throws -> PostgresQueryResult {
        try answer(to: sql, connection.query(Self.query(sql, arguments), logger: logger), within: answerTimeout)
    }

    /// Runs a statement that must be answered within `seconds`; otherwise closes the connection and throws.
    @discardableResult
    func run(_ sql: String, _ arguments: [any SQLValueConvertible], answerWithin seconds: TimeInterval) throws -> PostgresQueryResult {
        try answer(to: sql, connection.query(Self.query(sql, arguments), logger: logger), within: seconds)
    }

    /// The connection's prepared statement of `sql`, prepared now if this connection has not yet.
    private func preparedStatement(_ sql: String) throws -> PreparedQuery {
        if let known = pooled.prepared[sql] { return known }
        precondition(Placeholders.everyOneCast(sql), "a prepared statement casts every placeholder: \(sql)")
        let statement = try answer(to: sql, connection.prepare(query: Placeholders.numbered(sql)), within: answerTimeout)
        pooled.prepared[sql] = statement
        return statement
    }

    /// Sends `sql` without waiting for its answer. PostgresNIO sends the next statement once the server has answered
    /// this one, and the answers arrive in order, so the next statement's answer settles it (``answer(to:_:within:)``):
    /// its failure is reported then, in place of that statement's, and a connection that closed before answering it is
    /// ``PostgresEngineError/connectionLost(_:)`` of `sql`, as if the thread had waited for it. A `.prepared` statement
    /// not yet prepared on this connection is prepared first, waiting for that.
    func rowsAhead(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> () throws -> [SQLRow] {
        let answer = try sendAhead(sql, arguments, reuse: reuse)
        return {
            let (rows, format) = try answer()
            return try Self.rows(rows, format: format)
        }
    }

    /// ``rowsAhead(_:_:reuse:)``'s sending: the answer's rows as postgres-nio gives them, and the format to read their
    /// cells in when it is not the one they are described with.
    private func sendAhead(_ sql: String, _ arguments: [any SQLValueConvertible], reuse: StatementReuse) throws -> () throws -> ([PostgresRow], PostgresFormat?) {
        let future: EventLoopFuture<[PostgresRow]>
        var format: PostgresFormat?
        if reuse == .prepared {
            future = try preparedStatement(sql).execute(arguments.map(Self.data))
            // PostgresNIO asks for a prepared statement's results in binary format but describes its columns as the
            // server did when preparing (text), so the cells are read as what was asked for.
            format = .binary
        } else {
            future = connection.query(Self.query(sql, arguments), logger: logger).map(\.rows)
        }
        let outcome = NIOLockedValueBox<Result<Void, any Error>?>(nil)
        future.whenComplete { result in outcome.withLockedValue { $0 = result.map { _ in } } }
        pooled.sentAhead.append((sql, outcome))
        return { [format] in (try answer(to: sql, future, within: answerTimeout), format) }
    }

    /// The result of `future`, waited for at most `seconds` (for ever when nil); past that the connection is closed,
    /// since the server may never answer, and the statement fails. A connection that closes first fails it at once.
    /// A statement sent ahead is settled first: its failure, or its missing answer, is what is reported.
    private func answer<T: Sendable>(to sql: String, _ future: EventLoopFuture<T>, within seconds: TimeInterval?) throws -> T {
        let answered = DispatchSemaphore(value: 0)
        let answer = NIOLockedValueBox<Result<T, any Error>?>(nil)
        future.whenComplete { result in
            answer.withLockedValue { $0 = result }
            answered.signal()
        }
        let inTime = pooled.wait(for: answered, within: seconds)
        let result = answer.withLockedValue { $0 }
        // The statements sent ahead of this one were answered before it, if it was (their promises were completed
        // first); those still unanswered were sent after it (this is one sent ahead, asked for its rows) and wait for a
        // later answer, or, when this one has none, the first of them is what the server never answered.
        var unanswered = sql
        while let sent = pooled.sentAhead.first {
            guard let outcome = sent.outcome.withLockedValue({ $0 }) else {
                if result == nil { unanswered = sent.sql }
                break
            }
            pooled.sentAhead.removeFirst()
            if case .failure(let error) = outcome {
                pooled.sentAhead.removeAll()
                if connection.isClosed { throw PostgresEngineError.connectionLost(sent.sql) }
                throw error
            }
        }
        if let result { return try result.get() }
        if inTime { throw PostgresEngineError.connectionLost(unanswered) }
        // Closed, and the close finished, before the lease can be given back: the pool must not hand it out again.
        try? connection.close().wait()
        throw PostgresEngineError.noAnswer(unanswered, seconds ?? 0)
    }

    static func query(_ sql: String, _ arguments: [any SQLValueConvertible]) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            if let array = argument as? SQLArray {
                bindings.append(array)
                continue
            }
            switch argument.sqlValue {
            case .null: bindings.appendNull()
            case .integer(let integer): bindings.append(integer)
            case .real(let real): bindings.append(real)
            case .text(let text): bindings.append(text)
            case .blob(let bytes): bindings.append(ByteBuffer(bytes: bytes))
            }
        }
        return PostgresQuery(unsafeSQL: Placeholders.numbered(sql), binds: bindings)
    }

    /// One argument of a prepared statement, in binary format (the statement's casts give its type).
    static func data(_ argument: any SQLValueConvertible) -> PostgresData {
        if let array = argument as? SQLArray {
            var buffer = ByteBuffer()
            array.encode(into: &buffer, context: .default)
            return PostgresData(type: array.psqlType, formatCode: .binary, value: buffer)
        }
        return switch argument.sqlValue {
        case .null: PostgresData.null
        case .integer(let integer): PostgresData(int64: integer)
        case .real(let real): PostgresData(double: real)
        case .text(let text): PostgresData(string: text)
        case .blob(let bytes): PostgresData(type: .bytea, formatCode: .binary, value: ByteBuffer(bytes: bytes))
        }
    }

    /// A binary `numeric` (digit count, weight, sign, scale, then base-10,000 digits, most significant first) as an
    /// integer, when it is whole and fits in 64 bits; nil otherwise.
    static func wholeNumeric(_ bytes: ByteBuffer) -> Int64? {
        var buffer = bytes
        guard let count = buffer.readInteger(as: Int16.self), let weight = buffer.readInteger(as: Int16.self),
              let sign = buffer.readInteger(as: UInt16.self), buffer.readInteger(as: Int16.self) != nil,
              sign == 0 || sign == 0x4000, count >= 0, buffer.readableBytes == Int(count) * 2 else { return nil }
        if count == 0 { return 0 }
        guard weight >= 0, weight < 5 else { return nil }
        var magnitude: Int64 = 0
        for position in 0...Int(weight) {
            let digit = position < Int(count) ? Int64(buffer.readInteger(as: Int16.self) ?? 0) : 0
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 10_000)
            let (sum, carry) = shifted.addingReportingOverflow(digit)
            guard !overflow, !carry else { return nil }
            magnitude = sum
        }
        // Digits after the units are a fraction: whole only when they are all zero.
        while buffer.readableBytes >= 2 { if buffer.readInteger(as: Int16.self) != 0 { return nil } }
        return sign == 0x4000 ? -magnitude : magnitude
    }

    /// The column types ``value(_:)`` reads.
    static let readableTypes: Set<PostgresDataType> = [.int2, .int4, .int8, .bool, .float4, .float8, .numeric, .text, .varchar, .bpchar, .name, .bytea]

    /// How many columns `row` has; throws ``PostgresEngineError/unsupportedType(_:)`` when one has a type ``value(_:)``
    /// does not read.
    static func checkReadable(_ row: PostgresRow) throws -> Int {
        var count = 0
        for cell in row {
            guard readableTypes.contains(cell.dataType) else { throw PostgresEngineError.unsupportedType("\(cell.dataType)") }
            count += 1
        }
        return count
    }

    static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2: return .integer(Int64(try cell.decode(Int16.self)))
        case .int4: return .integer(Int64(try cell.decode(Int32.self)))
        case .int8: return .integer(try cell.decode(Int64.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .float4: return .real(Double(try cell.decode(Float.self)))
        case .float8: return .real(try cell.decode(Double.self))
        case .numeric:
            // Sums of bigint and rounded values arrive as numeric: whole ones as integers, others as doubles, as SQLite
            // gives them. Whole ones, nearly every cell of a report, are read from the binary digits: through Foundation's
            // Decimal they cost about a microsecond each, a third of a 360-row report's time.
            if cell.format == .binary, let bytes = cell.bytes, let integer = Self.wholeNumeric(bytes) { return .integer(integer) }
            let text = try cell.decode(Decimal.self).description
            if let integer = Int64(text) { return .integer(integer) }
            return .real(Double(text) ?? .nan)
        case .text, .varchar, .bpchar, .name: return .text(try cell.decode(String.self))
        case .bytea:
            var buffer = try cell.decode(ByteBuffer.self)
            return .blob(buffer.readBytes(length: buffer.readableBytes) ?? [])
        default: throw PostgresEngineError.unsupportedType("\(cell.dataType)")
        }
    }
}
