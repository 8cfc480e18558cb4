import CSV
import Foundation
import Postback

/// One exchange rate the user gives: on `day`, one unit of `from` is worth `rate` units of `to`.
public struct ExchangeRate: Sendable, Equatable {
    public var day: String
    public var from: String
    public var to: String
    /// Exact (a decimal as written, up to 12 decimals).
    public var rate: Decimal
    /// The line of the file it came from.
    public var line: Int

    /// A rate.
    public init(day: String, from: String, to: String, rate: Decimal, line: Int = 0) {
        self.day = day
        self.from = from
        self.to = to
        self.rate = rate
        self.line = line
    }
}

/// Reads a daily exchange-rate table: `date, from, to, rate` (one unit of `from` is `rate` units of `to`), every line
/// checked, the whole file refused on any problem.
public enum ExchangeRateFile {
    /// The rates of `bytes`, or every problem found.
    public static func read(_ bytes: [UInt8]) -> Result<[ExchangeRate], SpendFileProblems> {
        var problems: [CSVProblem] = []
        var total = 0
        func problem(_ line: Int, _ column: String?, _ message: String) {
            total += 1
            if problems.count < SpendFile.problemsListed { problems.append(CSVProblem(line: line, column: column, message: message)) }
        }
        var reader = CSVReader(bytes, maximumFields: 16, maximumFieldBytes: 64)
        var rates: [ExchangeRate] = []
        var seen: [String: Int] = [:]
        do {
            guard let header = try reader.next() else { return .failure(SpendFileProblems(problems: [CSVProblem(line: 1, message: "the file is empty; it needs the header date,from,to,rate")], total: 1)) }
            let names = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            let wanted = ["date", "from", "to", "rate"]
            guard let indexes = Optional(wanted.compactMap { names.firstIndex(of: $0) }), indexes.count == wanted.count else {
                return .failure(SpendFileProblems(problems: [CSVProblem(line: 1, message: "needs the columns date, from, to and rate (one unit of from is rate units of to)")], total: 1))
            }
            while let record = try reader.next() {
                if record.fields.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) { continue }
                let cells = indexes.map { $0 < record.fields.count ? record.fields[$0].trimmingCharacters(in: .whitespaces) : "" }
                var bad = false
                func fail(_ column: String, _ message: String) {
                    problem(record.line, column, message)
                    bad = true
                }
                let day = SpendFile.day(cells[0])
                if day == nil { fail("date", "must be a date such as 2026-11-20, got \(SpendFile.quoted(cells[0]))") }
                let (from, to) = (cells[1].uppercased(), cells[2].uppercased())
                if !CurrencyCode.isKnown(from) { fail("from", "must be an ISO 4217 currency code such as EUR, got \(SpendFile.quoted(cells[1]))") }
                if !CurrencyCode.isKnown(to) { fail("to", "must be an ISO 4217 currency code such as USD, got \(SpendFile.quoted(cells[2]))") }
                if from == to, !bad { fail("to", "is the same currency as from") }
                let rate = MoneyText.rate(cells[3])
                if rate == nil { fail("rate", "must be a positive number such as 1.0842 (a dot for decimals, at most 12), got \(SpendFile.quoted(cells[3]))") }
                guard !bad, let day, let rate else { continue }
                let key = "\(day)|\(from)|\(to)"
                if let first = seen[key] {
                    problem(record.line, nil, "repeats line \(first) (the same date and currencies); give each once")
                    continue
                }
                seen[key] = record.line
                rates.append(ExchangeRate(day: day, from: from, to: to, rate: rate, line: record.line))
            }
        } catch {
            problem(error.line, error.column, error.message)
        }
        if total > 0 { return .failure(SpendFileProblems(problems: problems, total: total)) }
        if rates.isEmpty { return .failure(SpendFileProblems(problems: [CSVProblem(line: 2, message: "the file has a header but no rates")], total: 1)) }
        return .success(rates)
    }
}
