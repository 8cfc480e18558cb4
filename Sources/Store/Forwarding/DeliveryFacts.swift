import JWS

/// The facts one postback offers a template, each kept as the JSON text a body sends (a fact the postback lacks is
/// absent, never null): the facts reader writes a row's cells straight into that text, so a body is made without a
/// value per fact.
public struct DeliveryFacts: Sendable {
    /// The JSON text of each fact set, one after another (a fact set again leaves its old text unused).
    private var text: [UInt8] = []
    /// Where each field's text lies in `text`, by ``DeliveryField/place``; empty when the postback has none (no JSON
    /// text is empty).
    private var spans = Array(repeating: 0..<0, count: DeliveryField.allCases.count)

    /// No facts (for `original`).
    public static let none = DeliveryFacts()

    /// No facts yet, with room for `bytes` of their text.
    init(capacity bytes: Int = 0) {
        text.reserveCapacity(bytes)
    }

    /// The facts in `values`.
    public init(_ values: [DeliveryField: JSONValue]) {
        self.init()
        for (field, value) in values { self[field] = value }
    }

    /// The fact's value as the template sends it, or nil when the postback has none.
    public subscript(field: DeliveryField) -> JSONValue? {
        get { json(at: field.place).flatMap { try? JSONParser.parse(Array($0)) } }
        set {
            guard let newValue else { return spans[field.place] = 0..<0 }
            write(at: field.place) { newValue.write(into: &$0) }
        }
    }

    /// The JSON text of the field at `place` (``DeliveryField/place``), or nil when the postback has none.
    func json(at place: Int) -> ArraySlice<UInt8>? {
        let span = spans[place]
        return span.isEmpty ? nil : text[span]
    }

    /// Sets the field at `place` to the JSON text `write` appends (one value, never empty).
    mutating func write(at place: Int, _ write: (inout [UInt8]) throws -> Void) rethrows {
        let start = text.count
        try write(&text)
        spans[place] = start..<text.count
    }
}

extension DeliveryFacts: Equatable {
    /// The same facts, each with the same JSON text, byte for byte.
    public static func == (lhs: DeliveryFacts, rhs: DeliveryFacts) -> Bool {
        DeliveryField.allCases.indices.allSatisfy { lhs.json(at: $0) == rhs.json(at: $0) }
    }
}
