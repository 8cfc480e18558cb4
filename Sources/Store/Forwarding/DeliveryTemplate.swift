import JWS

/// What a forwarding rule sends a partner: `original` (Apple's body byte for byte) or an enriched JSON body that maps
/// Apple's fields as received and the postback's ``DeliveryField``s into the partner's keys. A template is a data file
/// (docs/operations.md#delivery-templates); networks add their own without a release.
///
/// A file is a JSON object:
/// `{"template": "acme", "description": "...", "source": "https://...", "apple_fields": true, "fields": {"partner-key": "campaign_name"}}`.
public struct DeliveryTemplate: Sendable, Equatable {
    /// The template every rule uses unless it names another: Apple's body as the device sent it.
    public static let original = "original"

    /// Its name, as rules name it: 1 to 64 of `a-z 0-9 . _ -`.
    public let name: String
    /// What it is for, in a line.
    public let description: String
    /// Where the partner documents the layout (a URL), or `countersign` for a layout of our own.
    public let source: String
    /// Whether the body starts with every member of Apple's body, as received.
    public let appleFields: Bool
    /// One of the partner's keys and the fact it takes; `asText` sends a number or flag as text (`"1700000000"`).
    public struct Entry: Sendable, Equatable {
        public let key: String
        public let field: DeliveryField
        public let asText: Bool
        /// `field`'s place in ``DeliveryFacts``.
        let place: Int
        /// `"key":` as the body writes it.
        let keyBytes: [UInt8]

        init(key: String, field: DeliveryField, asText: Bool) {
            self.key = key
            self.field = field
            self.asText = asText
            place = field.place
            var bytes: [UInt8] = []
            JSONValue.writeString(key, into: &bytes)
            keyBytes = bytes + [UInt8(ascii: ":")]
        }
    }

    /// The partner's keys, in order. A fact the postback lacks is left out, never sent as null.
    public let fields: [Entry]
    /// Whether this is `original`.
    public var isOriginal: Bool { name == Self.original }

    /// Why a template file was refused: where, and what it must be.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let field: String
        public let message: String
        public var description: String { "\(field): \(message)" }
    }

    /// The most a template file may hold.
    public static let maximumBytes = 64 * 1024
    public static let maximumFields = 200

    /// The fields Apple's bodies carry, in the order of Apple's documentation (SKAdNetwork 1.0-4.0, then
    /// AdAttributionKit's own).
    public static let appleFieldNames = [
        "version", "ad-network-id", "campaign-id", "source-identifier", "transaction-id", "app-id", "attribution-signature", "redownload",
        "source-app-id", "source-domain", "fidelity-type", "conversion-value", "coarse-conversion-value", "did-win", "postback-sequence-index",
        "jws-string", "ad-interaction-type", "country-code", "postback-identifier", "conversion-type", "advertised-item-identifier",
        "publisher-item-identifier", "impression-type", "marketplace-identifier", "conversion-window", "ad-network-identifier",
    ]

    /// A template may not put a fact under one of Apple's fields, so Apple's fields are never changed.
    static let appleKeys = Set(appleFieldNames)
    /// Apple's names for the parser, which then shares their strings instead of making one per body.
    static let appleKeyTable = JSONKeyTable(appleFieldNames)

    /// The key every test delivery carries (`true`), beside the `Countersign-Test` header.
    public static let testKey = "countersign-test"

    /// The `original` template.
    public static let originalTemplate = DeliveryTemplate(name: original, description: "Apple's body byte for byte, as the device sent it.",
                                                          source: "countersign", appleFields: true, fields: [])

    init(name: String, description: String, source: String, appleFields: Bool, fields: [Entry]) {
        self.name = name
        self.description = description
        self.source = source
        self.appleFields = appleFields
        self.fields = fields
    }

    /// Reads and checks a template file; every problem names the member it is in.
    public static func parse(_ bytes: [UInt8]) throws(Problem) -> DeliveryTemplate {
        guard bytes.count <= maximumBytes else { throw Problem(field: "file", message: "must be at most \(maximumBytes) bytes") }
        let value: JSONValue
        do { value = try JSONParser.parse(bytes, limits: JSONLimits(maximumValues: 1000, maximumStringBytes: 2048)) } catch {
            throw Problem(field: "file", message: "is not JSON: \(error.located(in: bytes))")
        }
        guard let object = value.object else { throw Problem(field: "file", message: "must be a JSON object with template, source and fields") }
        let known = ["template", "description", "source", "apple_fields", "fields"]
        for member in object.members where !known.contains(member.key) {
            throw Problem(field: member.key, message: "unknown member; a template has \(known.joined(separator: ", "))")
        }
        guard let name = object["template"]?.string, Self.isName(name) else {
            throw Problem(field: "template", message: "must be the template's name: 1 to 64 characters of a-z, 0-9, '.', '_' and '-'")
        }
        guard name != original else { throw Problem(field: "template", message: "original is Apple's body byte for byte; name yours otherwise") }
        let description = object["description"]?.string ?? ""
        guard object["description"] == nil || object["description"]?.string != nil, description.count <= 500, !LabelText.hasRefused(description) else {
            throw Problem(field: "description", message: "must be at most 500 characters without \(LabelText.refusedKinds)")
        }
        guard let source = object["source"]?.string, !source.isEmpty, source.count <= 500, !LabelText.hasRefused(source) else {
            throw Problem(field: "source", message: "must name where the partner documents the layout (a URL), or countersign")
        }
        var appleFields = true
        if let flag = object["apple_fields"] {
            guard let value = flag.bool else { throw Problem(field: "apple_fields", message: "must be true or false") }
            appleFields = value
        }
        guard let members = object["fields"]?.object else {
            throw Problem(field: "fields", message: #"must be an object of the partner's keys and the facts they take, such as {"ad-network-campaign-name": "campaign_name"}"#)
        }
        guard members.members.count <= maximumFields else { throw Problem(field: "fields", message: "must hold at most \(maximumFields) keys") }
        var fields: [Entry] = []
        var seen: Set<String> = []
        for member in members.members {
            let key = member.key
            guard (1...100).contains(key.count), !JSONText.hasControlCharacter(key), !LabelText.hasRefused(key) else {
                throw Problem(field: "fields", message: "each key must be 1 to 100 characters without controls")
            }
            guard seen.insert(key).inserted else { throw Problem(field: "fields.\(key)", message: "appears twice") }
            guard !(appleFields && appleKeys.contains(key)), key != testKey else {
                throw Problem(field: "fields.\(key)", message: "is \(key == testKey ? "the test marker" : "one of Apple's fields"), which a template never changes")
            }
            fields.append(try entry(key: key, member.value))
        }
        guard appleFields || !fields.isEmpty else { throw Problem(field: "fields", message: "must name a fact when apple_fields is false") }
        return DeliveryTemplate(name: name, description: description, source: source, appleFields: appleFields, fields: fields)
    }

    /// A key's fact: its name (`"campaign_name"`), or `{"fact": "received_at_unix", "as": "text"}`.
    private static func entry(key: String, _ value: JSONValue) throws(Problem) -> Entry {
        let usage = #"must name a fact ("campaign_name") or be {"fact": "received_at_unix", "as": "text"}; the facts are "#
            + DeliveryField.allCases.map(\.rawValue).joined(separator: ", ")
        if let text = value.string {
            guard let field = DeliveryField(rawValue: text) else { throw Problem(field: "fields.\(key)", message: usage) }
            return Entry(key: key, field: field, asText: false)
        }
        guard let object = value.object, object.members.allSatisfy({ ["fact", "as"].contains($0.key) }),
              let field = object["fact"]?.string.flatMap(DeliveryField.init(rawValue:)) else {
            throw Problem(field: "fields.\(key)", message: usage)
        }
        guard object["as"] == nil || object["as"] == .string("text") else { throw Problem(field: "fields.\(key).as", message: "must be text") }
        return Entry(key: key, field: field, asText: object["as"] != nil)
    }

    /// Whether `text` can name a template (as rule names are made).
    public static func isName(_ text: String) -> Bool {
        (1...64).contains(text.count) && text.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "." || $0 == "_" || $0 == "-" }
    }

    /// Whether the body needs the postback's facts (any field, beyond Apple's body).
    public var needsFacts: Bool { !fields.isEmpty }

    /// Whether the body sends the install's cost, which reads the spend in force.
    public var usesCost: Bool { fields.contains { $0.field == .costPerInstall || $0.field == .costCurrency } }

    /// The body for one postback: `original` gives `appleBody` unchanged (with the test marker added to a test);
    /// otherwise Apple's members as received, byte for byte (when `apple_fields`), then each key whose fact the
    /// postback has.
    public func render(appleBody: [UInt8], facts: DeliveryFacts, test: Bool = false) -> [UInt8] {
        if isOriginal, !test { return appleBody }
        var apple: JSONObject?
        if appleFields { apple = (try? JSONParser.parse(appleBody, keys: Self.appleKeyTable))?.object }
        // A template never takes one of Apple's documented fields (``parse(_:)`` refuses them), so only a member
        // Apple's documentation does not name can already hold one of its keys: that member stays, the fact is left out.
        let taken = Set(apple?.members.map(\.key).filter { !Self.appleKeys.contains($0) } ?? [])
        // The facts as members, each after a comma: `,"key":value`.
        var added: [UInt8] = []
        added.reserveCapacity(fields.count * 48)
        for entry in fields {
            guard let json = facts.json(at: entry.place), taken.isEmpty || !taken.contains(entry.key) else { continue }
            added.append(UInt8(ascii: ","))
            added.append(contentsOf: entry.keyBytes)
            // A number or flag sent as text is its literal in quotes: neither holds a character JSON escapes.
            let quoted = entry.asText && json.first.map(Self.startsNumberOrFlag) == true
            if quoted { added.append(UInt8(ascii: "\"")) }
            added.append(contentsOf: json)
            if quoted { added.append(UInt8(ascii: "\"")) }
        }
        if test { added.append(contentsOf: #","countersign-test":true"#.utf8) }
        // Apple's members go as received, byte for byte: the facts are added before the object's closing brace.
        guard let apple, let close = appleBody.lastIndex(where: { !Self.isJSONSpace($0) }), appleBody[close] == UInt8(ascii: "}") else {
            guard !added.isEmpty else { return Array("{}".utf8) }
            added[0] = UInt8(ascii: "{")
            added.append(UInt8(ascii: "}"))
            return added
        }
        guard !added.isEmpty else { return Array(appleBody[...close]) }
        var body: [UInt8] = []
        body.reserveCapacity(close + added.count + 1)
        body.append(contentsOf: appleBody[..<close])
        body.append(contentsOf: apple.members.isEmpty ? added.dropFirst() : added[...])
        body.append(UInt8(ascii: "}"))
        return body
    }

    private static func isJSONSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

    /// Whether JSON text that starts with `byte` is a number or a flag (`true`, `false`).
    private static func startsNumberOrFlag(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "t") || byte == UInt8(ascii: "f")
    }

    /// The template as a file, as `countersign forward template show` prints it and ``parse(_:)`` reads it.
    public var json: JSONObject {
        var members = [JSONMember(key: "template", value: .string(name))]
        if !description.isEmpty { members.append(JSONMember(key: "description", value: .string(description))) }
        members.append(JSONMember(key: "source", value: .string(source)))
        members.append(JSONMember(key: "apple_fields", value: .bool(appleFields)))
        members.append(JSONMember(key: "fields", value: .object(JSONObject(fields.map { entry in
            let fact = JSONValue.string(entry.field.rawValue)
            return JSONMember(key: entry.key, value: entry.asText
                ? .object(JSONObject([JSONMember(key: "fact", value: fact), JSONMember(key: "as", value: .string("text"))])) : fact)
        }))))
        return JSONObject(members)
    }
}
