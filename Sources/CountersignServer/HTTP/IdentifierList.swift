import CSV
import Hummingbird
import JWS
import Spend
import Store

/// The identifiers a network claims: one a line, or the first column of a CSV whose header names it
/// (`identifier`, `postback_identifier`, `transaction_id`), read as they arrive (trust round 4, finding 3): whole lines
/// (a record whose quoted cell holds a line break included) are read as soon as they are in, and each distinct
/// identifier is kept once in ``ClaimedIdentifiers``, so neither the upload nor a string per identifier is ever held.
/// A bad line, no identifier or more than the maximum is a 400 naming it, as when the list is read whole.
package struct IdentifierList {
    /// The distinct identifiers read so far.
    package private(set) var claimed = ClaimedIdentifiers()
    /// Bytes after the last whole record.
    private var pending: [UInt8] = []
    /// Bytes of ``pending`` already looked through for the end of a record.
    private var scanned = 0
    /// Whether ``pending``, as scanned, ends inside a quoted cell (an odd number of quotes so far).
    private var quoted = false
    /// The line ``pending`` starts on (from 1).
    private var line = 1
    /// Identifiers read, duplicates included.
    private var identifiersRead = 0
    private let sizes: PostbackReconciliation.Sizes

    /// The longest record held while waiting for its end. A good one is far shorter (at most 64 cells of 128 bytes, so
    /// under 9 KB); one longer is a bad line.
    static let longestRecord = 64 * 1024

    /// A reader taking at most `sizes.listSlice` bytes at a time and `sizes.maximumIdentifiers` identifiers.
    package init(sizes: PostbackReconciliation.Sizes = PostbackReconciliation.Sizes()) {
        self.sizes = sizes
    }

    /// The identifiers of a whole file (the CLI), each once, in order, or 400 naming the first bad line (or saying there
    /// are none).
    package static func read(_ bytes: [UInt8]) throws -> [String] {
        var list = IdentifierList()
        try list.append(bytes)
        return try list.finish().all
    }

    /// The identifiers of `request`'s body, read as it arrives (at most `limit` bytes: 413 beyond).
    static func read(_ request: Request, limit: Int, sizes: PostbackReconciliation.Sizes) async throws -> ClaimedIdentifiers {
        var list = IdentifierList(sizes: sizes)
        try await RequestBody.stream(request, limit: limit) { buffer in try list.append(buffer.readableBytesView) }
        return try list.finish()
    }

    /// Reads `bytes`, the next part of the list, `sizes.listSlice` bytes at a time.
    package mutating func append<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws {
        var start = bytes.startIndex
        while start != bytes.endIndex {
            let end = bytes.index(start, offsetBy: max(1, sizes.listSlice), limitedBy: bytes.endIndex) ?? bytes.endIndex
            try take(bytes[start..<end])
            start = end
        }
    }

    /// The identifiers once the list has ended, or 400 for a bad last line or a list without any.
    package mutating func finish() throws -> ClaimedIdentifiers {
        if !pending.isEmpty {
            try records(pending[...])
            pending = []
        }
        guard identifiersRead > 0 else {
            throw APIError(.badRequest, .badParameter, "no identifiers: send the postback identifiers the network claims, one a line")
        }
        return claimed
    }

    /// Adds `part` to what waits for a record's end, and reads every whole record now in. A line break ends a record
    /// unless it is inside a quoted cell, which an odd number of quotes since the record began says (a doubled quote
    /// inside a cell counts twice); a quote anywhere else is an error the CSV reader reports on the record's line.
    private mutating func take(_ part: some Collection<UInt8>) throws {
        pending.append(contentsOf: part)
        var cut = 0
        for index in scanned..<pending.count {
            switch pending[index] {
            case UInt8(ascii: "\""): quoted.toggle()
            case 0x0A where !quoted: cut = index + 1
            default: break
            }
        }
        scanned = pending.count
        if cut > 0 {
            try records(pending[..<cut])
            pending.removeFirst(cut)
            scanned -= cut
        } else if pending.count > Self.longestRecord {
            // No record ends here: the CSV reader names what is wrong with the one begun, and if it finds nothing,
            // the record is too long.
            let start = line
            try records(pending[...])
            throw APIError(.badRequest, .badParameter, "line \(start): a line is longer than \(Self.longestRecord) bytes")
        }
    }

    /// Reads the whole records `bytes` holds, which begin on ``line``, and moves ``line`` past them.
    private mutating func records(_ bytes: ArraySlice<UInt8>) throws {
        // CSVReader skips a byte-order mark at the start of what it reads; only the list's own start may have one, so
        // a later part that begins with one is read after a blank line, a line earlier.
        let marked = line > 1 && bytes.starts(with: [0xEF, 0xBB, 0xBF])
        var reader = CSVReader(marked ? [0x0A] + Array(bytes) : Array(bytes), maximumFields: 64, maximumFieldBytes: 128)
        let firstLine = marked ? line - 1 : line
        do {
            while let record = try reader.next() {
                let number = firstLine + record.line - 1
                var trimmed = Substring(record.fields[0])
                while let first = trimmed.utf8.first, first == 0x20 || first == 0x09 { trimmed = trimmed.dropFirst() }
                while let last = trimmed.utf8.last, last == 0x20 || last == 0x09 { trimmed = trimmed.dropLast() }
                let text = String(trimmed)
                if text.isEmpty || (number == 1 && ["identifier", "postback_identifier", "postback-identifier", "transaction_id", "transaction-id"].contains(text.lowercased())) { continue }
                guard text.utf8.count <= 128, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                    throw APIError(.badRequest, .badParameter, "line \(number): an identifier is at most 128 printable characters, such as a postback-identifier or transaction-id")
                }
                identifiersRead += 1
                guard identifiersRead <= sizes.maximumIdentifiers else {
                    throw APIError(.badRequest, .badParameter, "more than \(sizes.maximumIdentifiers) identifiers; send them in parts")
                }
                claimed.insert(text)
            }
        } catch let problem as CSVProblem {
            throw APIError(.badRequest, .badParameter, CSVProblem(line: firstLine + problem.line - 1, column: problem.column, message: problem.message).description)
        }
        line += bytes.count(where: { $0 == 0x0A })
    }

    /// `counts`: how many rows have each status.
    package static func counts(_ table: ReportTable) -> JSONMember {
        var counts: [PostbackReconciliation.Status: Int] = [:]
        for row in table.rows {
            if case .string(let status) = row[1], let known = PostbackReconciliation.Status(rawValue: status) { counts[known, default: 0] += 1 }
        }
        return PostbackReconciliation.counts(counts)
    }
}
