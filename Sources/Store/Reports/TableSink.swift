import JWS

/// Where the store lends the rows of a streamed read (an export, a reconciliation) as it reads them: the edge's writer of
/// an output format. The store never knows the format; the sink never reads the database.
public protocol TableSink: Sendable {
    /// Appends a row of JSON cells, one a column.
    mutating func append(_ row: [JSONValue])
    /// Appends a row as the database lends it (valid only during the call), written as ``ReportTable/cell(_:)`` makes
    /// each cell.
    mutating func append(cells row: SQLCells)
    /// Ends the table; `extra` members follow the rows where the format has a place for them.
    mutating func finish(extra: [JSONMember])
    /// The bytes written since the last take.
    mutating func take() -> [UInt8]
    /// How many bytes are written and not yet taken.
    var pendingCount: Int { get }
}
