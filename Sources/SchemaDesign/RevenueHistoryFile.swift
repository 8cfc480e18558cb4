import CSV
import Foundation
import Postback
import Spend

/// Reads a developer's per-user revenue, one row per purchase or event:
/// `user,hours_since_install,amount,currency[,date][,event]`. Every line is checked; the file is refused whole on any
/// problem, each named with its line and column.
public enum RevenueHistoryFile {
    /// The columns, in any order; `date` and `event` may be left out.
    public static let columns = ["user", "hours_since_install", "amount", "currency", "date", "event"]
    static let required = ["user", "hours_since_install", "amount", "currency"]
    /// The most hours after install a row may give (ten years): beyond it the column holds something else.
    static let maximumHours = 87_600.0

    /// The history of `bytes` in `currency`, amounts in other currencies converted with `rates` on the row's `date`.
    public static func read(_ bytes: [UInt8], currency: String, rates: [ExchangeRate]) -> Result<RevenueHistory, SpendFileProblems> {
        var problems: [CSVProblem] = []
        var total = 0
        func problem(_ line: Int, _ column: String?, _ message: String) {
            total += 1
            if problems.count < SpendFile.problemsListed { problems.append(CSVProblem(line: line, column: column, message: message)) }
        }
        let converter = CurrencyConverter(target: currency, rates: rates)
        var reader = CSVReader(bytes, maximumFields: columns.count, maximumFieldBytes: 256)
        var userIndex: [String: Int] = [:]
        var revenue: [[Int64]] = Array(repeating: [], count: RevenueHistory.windowEnds.count)
        var eventUsers: [String: Set<Int>] = [:]
        var rowsAfterLastWindow = 0
        var ratesUsed: Set<String> = []
        var days: [String: String?] = [:]
        do {
            guard let header = try reader.next() else {
                return .failure(SpendFileProblems(problems: [CSVProblem(line: 1, message: "the file is empty; it needs the header \(required.joined(separator: ","))[,date][,event]")], total: 1))
            }
            let names = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            if let unknown = names.first(where: { !columns.contains($0) }) {
                return .failure(SpendFileProblems(problems: [CSVProblem(line: 1, column: unknown, message: "is not a column of a revenue file; the columns are \(columns.joined(separator: ", ")) (date and event optional)")], total: 1))
            }
            let missing = required.filter { !names.contains($0) }
            let repeated = Set(names.filter { name in names.count { $0 == name } > 1 }).sorted()
            guard missing.isEmpty, repeated.isEmpty else {
                let what = missing.isEmpty ? "repeats \(repeated.joined(separator: ", "))" : "missing \(missing.joined(separator: ", "))"
                return .failure(SpendFileProblems(problems: [CSVProblem(line: 1, message: "needs each of the columns \(required.joined(separator: ", ")) once (date and event optional); \(what)")], total: 1))
            }
            let columnOf = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
            let positions = columns.map { columnOf[$0] ?? -1 }
            while let record = try reader.next() {
                if record.fields.allSatisfy({ trimmed($0).isEmpty }) { continue }
                // The cell of `columns[column]`; nil when the file has no such column.
                func cell(_ column: Int) -> String? {
                    let position = positions[column]
                    return position < 0 ? nil : position < record.fields.count ? trimmed(record.fields[position]) : ""
                }
                var bad = false
                func fail(_ column: String, _ message: String) {
                    problem(record.line, column, message)
                    bad = true
                }
                let user = cell(0) ?? ""
                if user.isEmpty { fail("user", "must name the user (any id of up to 256 bytes)") }
                let hoursText = cell(1) ?? ""
                let hours = Double(hoursText).flatMap { $0.isFinite && $0 >= 0 && $0 <= maximumHours ? $0 : nil }
                if hours == nil { fail("hours_since_install", "must be a number of hours from 0 to \(Int(maximumHours)), such as 26.5, got \(SpendFile.quoted(hoursText))") }
                let amountText = cell(2) ?? ""
                let micros = MoneyText.micros(amountText)
                if micros == nil {
                    fail("amount", amountText.hasPrefix("-") ? "must not be negative (refunds are left out of revenue)"
                        : "must be an amount such as 4.99 (a dot for decimals, at most 6), got \(SpendFile.quoted(amountText))")
                }
                let code = (cell(3) ?? "").uppercased()
                if code != currency, !CurrencyCode.isKnown(code) { fail("currency", "must be an ISO 4217 currency code such as USD, got \(SpendFile.quoted(cell(3) ?? ""))") }
                let dateText = cell(4) ?? ""
                let day: String?
                if dateText.isEmpty {
                    day = nil
                } else if let known = days[dateText] {
                    day = known
                } else {
                    day = SpendFile.day(dateText)
                    if days.count < 100_000 { days[dateText] = day }
                }
                if !dateText.isEmpty, day == nil { fail("date", "must be the purchase's date such as 2026-11-20, got \(SpendFile.quoted(dateText))") }
                let event = cell(5) ?? ""
                guard !bad, let hours, let micros else { continue }
                let position: Int
                if let known = userIndex[user] {
                    position = known
                } else {
                    position = userIndex.count
                    userIndex[user] = position
                    for window in revenue.indices { revenue[window].append(0) }
                }
                // No postback reports what comes after the last window: such a row needs no rate.
                guard hours < RevenueHistory.windowEnds[RevenueHistory.windowEnds.count - 1] else {
                    rowsAfterLastWindow += 1
                    continue
                }
                var amount = micros
                if code != currency, micros > 0 {
                    guard let day else {
                        fail("date", "is needed to convert \(code) into \(currency): give the purchase's date")
                        continue
                    }
                    guard let converted = converter.convert(micros: micros, from: code, on: day) else {
                        fail("currency", "has no \(code)>\(currency) rate on or before \(day); give one with --rates or import it with countersign spend rates")
                        continue
                    }
                    ratesUsed.insert(converted.label)
                    amount = converted.micros
                }
                if !event.isEmpty { eventUsers[event, default: []].insert(position) }
                for (window, end) in RevenueHistory.windowEnds.enumerated() where hours < end {
                    let (sum, overflow) = revenue[window][position].addingReportingOverflow(amount)
                    guard !overflow else {
                        fail("amount", "makes the user's revenue larger than any app earns")
                        break
                    }
                    revenue[window][position] = sum
                }
            }
        } catch {
            problem(error.line, error.column, error.message)
        }
        if total > 0 { return .failure(SpendFileProblems(problems: problems, total: total)) }
        if userIndex.isEmpty { return .failure(SpendFileProblems(problems: [CSVProblem(line: 2, message: "the file has a header but no rows")], total: 1)) }
        return .success(RevenueHistory(currency: currency, revenue: revenue, eventUsers: eventUsers.mapValues(\.count),
                                       rowsAfterLastWindow: rowsAfterLastWindow, ratesUsed: ratesUsed.sorted()))
    }

    /// `text` without the spaces and tabs around it (without Foundation's character sets: this runs on every cell).
    static func trimmed(_ text: String) -> String {
        let utf8 = text.utf8
        guard let first = utf8.first, let last = utf8.last, first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 else { return text }
        let start = utf8.firstIndex { $0 != 0x20 && $0 != 0x09 } ?? utf8.endIndex
        let end = utf8.lastIndex { $0 != 0x20 && $0 != 0x09 }.map { utf8.index(after: $0) } ?? start
        return start < end ? String(text[start..<end]) : ""
    }
}
