import Synchronization

/// Receipt ids reserved from PostgreSQL's sequence ahead of need, so a batch's receipts and rows go in one statement
/// (a row names its receipt) without a round trip for ids first. Several receivers reserve from the same sequence, so
/// ids never collide; ids reserved by a receiver that stops are never used, which leaves gaps, as any sequence may.
final class ReceiptIDs: Sendable {
    /// Ids reserved at a time: one round trip covers this many receipts.
    static let block = 1024
    private let reserved = Mutex<[Int64]>([])

    /// `count` unused ids, reserving more from the sequence in `db` when too few are left.
    func take(_ count: Int, _ db: any SQLSession) throws -> [Int64] {
        while true {
            let taken: [Int64]? = reserved.withLock { ids in
                guard ids.count >= count else { return nil }
                let taken = Array(ids.prefix(count))
                ids.removeFirst(count)
                return taken
            }
            if let taken { return taken }
            let fresh = try db.rows("SELECT nextval(pg_get_serial_sequence('receipts', 'id')) FROM generate_series(1, ?)", [max(count, Self.block)])
                .map { try $0.get(at: 0, as: Int64.self) }
            reserved.withLock { $0 += fresh }
        }
    }
}
