import CountersignServer
import ArgumentParser
import ConversionSchema
import CountersignEncoder
import Foundation
import JWS
import Postback
import SchemaDesign
import Spend
import Store

/// Where exchange rates for a revenue file come from: `--rates FILE`, else the rates imported into the database.
struct RateOptions: ParsableArguments {
    @Option(help: "Exchange rates (date,from,to,rate), for amounts in other currencies (default: those imported with spend rates).") var rates: String?
    @OptionGroup var database: DatabaseOption

    /// The revenue file at `path` in `currency`, or exit 1 with every problem printed.
    func history(_ path: String, currency: String) async throws -> RevenueHistory {
        var known: [ExchangeRate] = []
        if let rates {
            switch ExchangeRateFile.read(try SpendCommand.read(rates)) {
            case .failure(let problems): throw SpendCommand.refused(problems, file: rates)
            case .success(let read): known = read
            }
        } else if let store = database.database == nil ? try? database.open() : try database.open() {
            defer { store.close() }
            known = try await store.spend.rates()
        }
        switch RevenueHistoryFile.read(try SpendCommand.read(path), currency: currency, rates: known) {
        case .success(let history):
            var said = "\(path): \(history.users) users"
            if history.rowsAfterLastWindow > 0 { said += ", \(history.rowsAfterLastWindow) rows after hour 840 left out" }
            if !history.ratesUsed.isEmpty { said += ", converted with \(RatesUsed.summary(history.ratesUsed))" }
            if !history.eventUsers.isEmpty { said += ", users per event: " + history.eventUsers.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
            FileHandle.standardError.write(Data((said + "\n").utf8))
            return history
        case .failure(let problems):
            for problem in problems.problems { FileHandle.standardError.write(Data("\(path): \(problem.description)\n".utf8)) }
            throw CLIFailure.rejected("\(path) has \(problems.total) problem\(problems.total == 1 ? "" : "s"); fix them and run again")
        }
    }
}
