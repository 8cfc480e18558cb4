/// The distinct identifiers of a network's list (``PostbackReconciliation``), in the order first given and spelt as
/// first given, each kept once whatever its case, in a compact form (trust round 4, finding 3): all in one buffer, a
/// UUID (the shape of Apple's `postback-identifier` and `transaction-id`) in 17 bytes (21 when its letters mix cases),
/// any other identifier in its bytes and a few more, with an open-addressing table of 4-byte offsets, never more than
/// half full, to find one. A million UUIDs take about 25 MB, where a list of strings and a dictionary of their lower
/// case took several hundred.
///
/// Two identifiers are the same when their lower case is (`String.lowercased()`): for a UUID, when its 128 bits are.
public struct ClaimedIdentifiers: Sendable {
    /// The identifiers one after another, each a tag (``Tag``) and what the tag says follows.
    private var records: [UInt8] = []
    /// 0 for an empty slot, else the offset of a record in ``records`` plus 1.
    private var slots = [UInt32](repeating: 0, count: 1024)
    /// How many distinct identifiers are kept.
    public private(set) var count = 0

    /// What a record holds after its tag byte.
    private enum Tag: UInt8 {
        /// A UUID whose letters are lower case: its 16 bytes.
        case lowerUUID
        /// A UUID whose letters are upper case: its 16 bytes.
        case upperUUID
        /// A UUID whose letters mix cases: its 16 bytes, then 4 bytes (little-endian) with bit `n` set when hex digit `n`
        /// is an upper-case letter.
        case mixedUUID
        /// ASCII text of at most 255 bytes: its length in one byte, then its bytes; its lower case is made as needed.
        case ascii
        /// Any other text: its length in 4 bytes (little-endian) and its bytes, then its lower case the same way.
        case text
    }

    /// An identifier as identifiers are compared: a UUID's 128 bits, or the bytes of any other identifier's lower case.
    private enum Key: Hashable {
        case uuid(UInt64, UInt64)
        case text([UInt8])
    }

    /// A UUID read from its 36 characters: its bits and the case of its letters.
    private struct UUIDText {
        var high: UInt64 = 0
        var low: UInt64 = 0
        /// Bit `n` is set when hex digit `n` is an upper-case letter.
        var upper: UInt32 = 0
        var hasLower = false

        /// The UUID `utf8` spells (8-4-4-4-12 hex digits, either case), or nil.
        init?(_ utf8: UnsafeBufferPointer<UInt8>) {
            guard utf8.count == 36 else { return nil }
            var digit: UInt32 = 0
            for (index, byte) in utf8.enumerated() {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let value: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"):
                    value = byte - UInt8(ascii: "a") + 10
                    hasLower = true
                case UInt8(ascii: "A")...UInt8(ascii: "F"):
                    value = byte - UInt8(ascii: "A") + 10
                    upper |= UInt32(1) << digit
                default: return nil
                }
                if digit < 16 { high = high << 4 | UInt64(value) } else { low = low << 4 | UInt64(value) }
                digit += 1
            }
        }
    }

    /// An empty list.
    public init() {}

    /// Keeps `identifier` unless one that is the same ignoring case is kept; says whether it was kept.
    @discardableResult
    public mutating func insert(_ identifier: String) -> Bool {
        var text = identifier
        let (key, uuid) = text.withUTF8 { utf8 -> (Key, UUIDText?) in
            if let uuid = UUIDText(utf8) { return (.uuid(uuid.high, uuid.low), uuid) }
            return (.text(Array(identifier.lowercased().utf8)), nil)
        }
        let mask = slots.count - 1
        var slot = key.hashValue & mask
        while slots[slot] != 0 {
            if matches(key, at: Int(slots[slot] - 1)) { return false }
            slot = (slot + 1) & mask
        }
        let offset = records.count
        if let uuid {
            if uuid.upper == 0 {
                records.append(Tag.lowerUUID.rawValue)
            } else if !uuid.hasLower {
                records.append(Tag.upperUUID.rawValue)
            } else {
                records.append(Tag.mixedUUID.rawValue)
            }
            Self.append(uuid.high, bytes: 8, bigEndian: true, to: &records)
            Self.append(uuid.low, bytes: 8, bigEndian: true, to: &records)
            if uuid.upper != 0 && uuid.hasLower { Self.append(UInt64(uuid.upper), bytes: 4, bigEndian: false, to: &records) }
        } else if identifier.utf8.count <= 255, identifier.utf8.allSatisfy({ $0 < 0x80 }) {
            records.append(Tag.ascii.rawValue)
            records.append(UInt8(identifier.utf8.count))
            records.append(contentsOf: identifier.utf8)
        } else {
            guard case .text(let lowered) = key else { return false }
            records.append(Tag.text.rawValue)
            Self.append(UInt64(identifier.utf8.count), bytes: 4, bigEndian: false, to: &records)
            records.append(contentsOf: identifier.utf8)
            Self.append(UInt64(lowered.count), bytes: 4, bigEndian: false, to: &records)
            records.append(contentsOf: lowered)
        }
        slots[slot] = UInt32(offset + 1)
        count += 1
        if count * 2 > slots.count { grow() }
        return true
    }

    /// Whether an identifier that is the same as `identifier` ignoring case is kept.
    public func contains(_ identifier: String) -> Bool {
        var text = identifier
        let key = text.withUTF8 { utf8 -> Key in
            if let uuid = UUIDText(utf8) { return .uuid(uuid.high, uuid.low) }
            return .text(Array(identifier.lowercased().utf8))
        }
        let mask = slots.count - 1
        var slot = key.hashValue & mask
        while slots[slot] != 0 {
            if matches(key, at: Int(slots[slot] - 1)) { return true }
            slot = (slot + 1) & mask
        }
        return false
    }

    /// Where reading the identifiers in order has got to (``next(_:from:)``); a new cursor is at the first.
    public struct Cursor: Sendable {
        fileprivate var offset = 0

        /// A cursor at the first identifier.
        public init() {}
    }

    /// The next `limit` identifiers (fewer at the end, none past it) from `cursor`, spelt as first given, and the cursor
    /// moved past them.
    public func next(_ limit: Int, from cursor: inout Cursor) -> [String] {
        var identifiers: [String] = []
        while identifiers.count < limit, cursor.offset < records.count {
            let (identifier, next) = record(at: cursor.offset)
            identifiers.append(identifier)
            cursor.offset = next
        }
        return identifiers
    }

    /// Every identifier, in order, spelt as first given.
    public var all: [String] {
        var cursor = Cursor()
        return next(count, from: &cursor)
    }

    /// Bytes the identifiers and the table take (tests, and the documentation of what a list costs).
    public var storageBytes: Int { records.count + slots.count * MemoryLayout<UInt32>.size }

    /// Whether the record at `offset` is the identifier `key` stands for.
    private func matches(_ key: Key, at offset: Int) -> Bool {
        switch (key, Tag(rawValue: records[offset])) {
        case (.uuid(let high, let low), .lowerUUID?), (.uuid(let high, let low), .upperUUID?), (.uuid(let high, let low), .mixedUUID?):
            return read(offset + 1, bytes: 8, bigEndian: true) == high && read(offset + 9, bytes: 8, bigEndian: true) == low
        case (.text(let lowered), .ascii?):
            let length = Int(records[offset + 1])
            guard length == lowered.count else { return false }
            for index in 0..<length where Self.lower(records[offset + 2 + index]) != lowered[index] { return false }
            return true
        case (.text(let lowered), .text?):
            let length = Int(read(offset + 1, bytes: 4, bigEndian: false))
            let keyStart = offset + 5 + length
            guard Int(read(keyStart, bytes: 4, bigEndian: false)) == lowered.count else { return false }
            return records[(keyStart + 4)..<(keyStart + 4 + lowered.count)].elementsEqual(lowered)
        default:
            return false
        }
    }

    /// The key of the record at `offset`, for moving it to a larger table.
    private func key(at offset: Int) -> Key {
        switch Tag(rawValue: records[offset]) {
        case .lowerUUID?, .upperUUID?, .mixedUUID?:
            return .uuid(read(offset + 1, bytes: 8, bigEndian: true), read(offset + 9, bytes: 8, bigEndian: true))
        case .ascii?:
            let length = Int(records[offset + 1])
            return .text(records[(offset + 2)..<(offset + 2 + length)].map(Self.lower))
        case .text?, nil:
            let keyStart = offset + 5 + Int(read(offset + 1, bytes: 4, bigEndian: false))
            let length = Int(read(keyStart, bytes: 4, bigEndian: false))
            return .text(Array(records[(keyStart + 4)..<(keyStart + 4 + length)]))
        }
    }

    /// The identifier at `offset`, spelt as given, and the offset of the next.
    private func record(at offset: Int) -> (String, Int) {
        switch Tag(rawValue: records[offset]) {
        case .lowerUUID?, .upperUUID?, .mixedUUID?:
            let tag = Tag(rawValue: records[offset])
            let high = read(offset + 1, bytes: 8, bigEndian: true), low = read(offset + 9, bytes: 8, bigEndian: true)
            let upper: UInt32 = switch tag {
            case .upperUUID?: UInt32.max
            case .mixedUUID?: UInt32(read(offset + 17, bytes: 4, bigEndian: false))
            default: 0
            }
            let text = String(unsafeUninitializedCapacity: 36) { buffer in
                var digit: UInt32 = 0
                for index in 0..<36 {
                    if index == 8 || index == 13 || index == 18 || index == 23 {
                        buffer[index] = UInt8(ascii: "-")
                        continue
                    }
                    let value = UInt8(truncatingIfNeeded: (digit < 16 ? high >> (4 * (15 - UInt64(digit))) : low >> (4 * (31 - UInt64(digit)))) & 0xF)
                    if value < 10 {
                        buffer[index] = UInt8(ascii: "0") + value
                    } else {
                        buffer[index] = (upper >> digit) & 1 == 1 ? UInt8(ascii: "A") + value - 10 : UInt8(ascii: "a") + value - 10
                    }
                    digit += 1
                }
                return 36
            }
            return (text, offset + (tag == .mixedUUID ? 21 : 17))
        case .ascii?:
            let length = Int(records[offset + 1])
            return (String(decoding: records[(offset + 2)..<(offset + 2 + length)], as: UTF8.self), offset + 2 + length)
        case .text?, nil:
            let length = Int(read(offset + 1, bytes: 4, bigEndian: false))
            let keyStart = offset + 5 + length
            let keyLength = Int(read(keyStart, bytes: 4, bigEndian: false))
            return (String(decoding: records[(offset + 5)..<keyStart], as: UTF8.self), keyStart + 4 + keyLength)
        }
    }

    /// Doubles the table and moves every record's slot into it.
    private mutating func grow() {
        var larger = [UInt32](repeating: 0, count: slots.count * 2)
        let mask = larger.count - 1
        for stored in slots where stored != 0 {
            var slot = key(at: Int(stored - 1)).hashValue & mask
            while larger[slot] != 0 { slot = (slot + 1) & mask }
            larger[slot] = stored
        }
        slots = larger
    }

    private func read(_ offset: Int, bytes: Int, bigEndian: Bool) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<bytes {
            let byte = UInt64(records[bigEndian ? offset + index : offset + bytes - 1 - index])
            value = value << 8 | byte
        }
        return value
    }

    private static func append(_ value: UInt64, bytes: Int, bigEndian: Bool, to records: inout [UInt8]) {
        for index in 0..<bytes {
            let shift = UInt64(8 * (bigEndian ? bytes - 1 - index : index))
            records.append(UInt8(truncatingIfNeeded: value >> shift))
        }
    }

    /// An ASCII byte in lower case.
    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
