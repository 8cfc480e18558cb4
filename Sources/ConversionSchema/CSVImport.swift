import CSV
import JWS
import Postback

/// Turns the mapping table MMP dashboards export into a schema document.
///
/// Columns (header row required, names case-insensitive, comma-separated, double quotes allowed):
/// `value` (0-63) or `coarse` (low/medium/high), `window` (0-2), `event`, `min revenue`, `max revenue`.
/// Optional `type` (`install` or `re-engagement`, default install). Rows with the same value are one value with
/// several events.
public enum CSVImport {
    /// A row-level problem, numbered from 1 for the header.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public let line: Int
        public let message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// Builds a schema document for `app` in `currency`, effective from `effectiveFrom` (ISO 8601 text).
    public static func schemaDocument(csv: String, app: AppID, currency: String, effectiveFrom: String) throws(Problem) -> JSONValue {
        let rows = try records(csv)
        guard let header = rows.first?.fields else { throw Problem(line: 1, message: "the file is empty") }
        let names = header.map { $0.lowercased().trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "_", with: " ") }
        func column(_ candidates: [String]) -> Int? { names.firstIndex { candidates.contains($0) } }
        let valueColumn = column(["value", "conversion value", "fine", "fine value"])
        let coarseColumn = column(["coarse", "coarse value", "coarse conversion value"])
        guard valueColumn != nil || coarseColumn != nil else { throw Problem(line: 1, message: "needs a value or coarse column") }
        guard let windowColumn = column(["window", "postback", "postback sequence index"]) else { throw Problem(line: 1, message: "needs a window column") }
        guard let eventColumn = column(["event", "event name"]) else { throw Problem(line: 1, message: "needs an event column") }
        let minColumn = column(["min revenue", "revenue min", "min"])
        let maxColumn = column(["max revenue", "revenue max", "max"])
        let typeColumn = column(["type", "conversion type"])

        // class -> window -> ("fine"|"coarse") -> key -> [events]
        var classes: [String: [Int: [String: [(key: String, events: [JSONValue])]]]] = [:]
        for record in rows.dropFirst() {
            let (line, row) = (record.line, record.fields)
            if row.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) { continue }
            func cell(_ index: Int?) -> String {
                guard let index, index < row.count else { return "" }
                return row[index].trimmingCharacters(in: .whitespaces)
            }
            let conversionClass = cell(typeColumn).isEmpty ? "install" : cell(typeColumn).lowercased()
            guard ["install", "re-engagement"].contains(conversionClass) else {
                throw Problem(line: line, message: "type must be install or re-engagement, got \"\(conversionClass)\"")
            }
            guard let window = Int(cell(windowColumn)), (0...2).contains(window) else {
                throw Problem(line: line, message: "window must be 0, 1 or 2, got \"\(cell(windowColumn))\"")
            }
            let kind: String
            let key: String
            if !cell(valueColumn).isEmpty {
                guard let value = Int(cell(valueColumn)), (0...63).contains(value) else {
                    throw Problem(line: line, message: "value must be 0 to 63, got \"\(cell(valueColumn))\"")
                }
                (kind, key) = ("fine", String(value))
            } else {
                let coarse = cell(coarseColumn).lowercased()
                guard ["low", "medium", "high"].contains(coarse) else {
                    throw Problem(line: line, message: "needs a value (0-63) or a coarse value (low, medium, high)")
                }
                (kind, key) = ("coarse", coarse)
            }
            let name = cell(eventColumn)
            guard !name.isEmpty else { throw Problem(line: line, message: "event is empty") }
            var event = JSONObject([JSONMember(key: "name", value: .string(name))])
            let minimum = cell(minColumn)
            let maximum = cell(maxColumn)
            if !minimum.isEmpty || !maximum.isEmpty {
                guard let low = Double(minimum.isEmpty ? "0" : minimum), let high = Double(maximum.isEmpty ? minimum : maximum) else {
                    throw Problem(line: line, message: "min and max revenue must be numbers")
                }
                event.set("revenue", .object(JSONObject([
                    JSONMember(key: "min", value: .number(literal(low))), JSONMember(key: "max", value: .number(literal(high))),
                ])))
            }
            var entries = classes[conversionClass, default: [:]][window, default: [:]][kind, default: []]
            if let index = entries.firstIndex(where: { $0.key == key }) {
                entries[index].events.append(.object(event))
            } else {
                entries.append((key, [.object(event)]))
            }
            classes[conversionClass, default: [:]][window, default: [:]][kind] = entries
        }
        var version = JSONObject([
            JSONMember(key: "version", value: .number("1")),
            JSONMember(key: "effective-from", value: .string(effectiveFrom)),
        ])
        for conversionClass in ["install", "re-engagement"] {
            guard let windows = classes[conversionClass] else { continue }
            var windowsObject = JSONObject()
            for window in windows.keys.sorted() {
                var definition = JSONObject()
                if let fine = windows[window]?["fine"] {
                    let values: [JSONValue] = fine.map { entry in
                        .object(JSONObject([JSONMember(key: "value", value: .number(entry.key)), JSONMember(key: "events", value: .array(entry.events))]))
                    }
                    definition.set("fine", .object(JSONObject([JSONMember(key: "values", value: .array(values))])))
                }
                if let coarse = windows[window]?["coarse"] {
                    var coarseObject = JSONObject()
                    for entry in coarse { coarseObject.set(entry.key, .object(JSONObject([JSONMember(key: "events", value: .array(entry.events))]))) }
                    definition.set("coarse", .object(coarseObject))
                }
                windowsObject.set(String(window), .object(definition))
            }
            version.set(conversionClass, .object(JSONObject([JSONMember(key: "windows", value: .object(windowsObject))])))
        }
        return .object(JSONObject([
            JSONMember(key: "format", value: .string(SchemaReader.format)),
            JSONMember(key: "app", value: .string(app.description)),
            JSONMember(key: "currency", value: .string(currency)),
            JSONMember(key: "versions", value: .array([.object(version)])),
        ]))
    }

    private static func literal(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    /// Every record of the table, read by ``CSVReader``.
    static func records(_ text: String) throws(Problem) -> [CSVReader.Record] {
        var reader = CSVReader(Array(text.utf8))
        var records: [CSVReader.Record] = []
        do {
            while let record = try reader.next() { records.append(record) }
        } catch {
            throw Problem(line: error.line, message: error.message)
        }
        return records
    }
}
