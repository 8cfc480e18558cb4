import Spend
import Testing
@testable import SchemaDesign

/// The revenue file's one layout: cumulative window revenue, conversion, and a specific error for anything else.
@Suite struct RevenueHistoryFileTests {
    static let rates = [ExchangeRate(day: "2026-11-01", from: "EUR", to: "USD", rate: 1.1)]

    static func read(_ text: String) -> Result<RevenueHistory, SpendFileProblems> {
        RevenueHistoryFile.read(Array(text.utf8), currency: "USD", rates: rates)
    }

    @Test func windowsCumulateFromInstall() throws {
        let history = try Self.read("""
        user,hours_since_install,amount,currency,date,event
        a,0,0,USD,,install
        b,1,1.50,USD,,purchase
        b,47.9,1.00,EUR,2026-11-03,purchase
        b,48,2,USD,,purchase
        b,200,3,USD,,purchase
        b,900,100,USD,,purchase
        b,901,100,EUR,,purchase
        c,839.5,0.25,USD,,
        """).get()
        #expect(history.users == 3)
        #expect(history.revenue[0] == [0, 2_600_000, 0], "1.50 + 1.00 EUR at 1.1")
        #expect(history.revenue[1] == [0, 4_600_000, 0], "hour 48 is in the second window")
        #expect(history.revenue[2] == [0, 7_600_000, 250_000])
        #expect(history.rowsAfterLastWindow == 2, "rows after hour 840 are left out, and need no rate")
        #expect(history.eventUsers == ["install": 1, "purchase": 1])
        #expect(history.ratesUsed == ["EUR>USD 1.1 (2026-11-01)"])
    }

    @Test func columnsMayComeInAnyOrderAndDateAndEventMayBeLeftOut() throws {
        let history = try Self.read("currency,amount,user,hours_since_install\nUSD,4.99,x,3\n").get()
        #expect(history.revenue[0] == [4_990_000])
    }

    @Test(arguments: [
        ("user,hours,amount,currency\n", "line 1, hours: is not a column of a revenue file"),
        ("user,amount,currency\n", "needs each of the columns user, hours_since_install, amount, currency once (date and event optional); missing hours_since_install"),
        ("user,hours_since_install,amount,currency,amount\n", "once (date and event optional); repeats amount"),
        ("user,hours_since_install,amount,currency\nu,1,-2,USD\n", "line 2, amount: must not be negative"),
        ("user,hours_since_install,amount,currency\nu,1,abc,USD\n", "line 2, amount: must be an amount such as 4.99"),
        ("user,hours_since_install,amount,currency\nu,x,1,USD\n", "line 2, hours_since_install: must be a number of hours"),
        ("user,hours_since_install,amount,currency\nu,1,1,ZZZ\n", "line 2, currency: must be an ISO 4217 currency code"),
        ("user,hours_since_install,amount,currency\nu,1,1,EUR\n", "line 2, date: is needed to convert EUR into USD"),
        ("user,hours_since_install,amount,currency,date\nu,1,1,JPY,2026-11-02\n", "line 2, currency: has no JPY>USD rate on or before 2026-11-02"),
        ("user,hours_since_install,amount,currency\n", "line 2: the file has a header but no rows"),
        ("", "line 1: the file is empty"),
    ])
    func badInputIsNamedWithItsLine(text: String, message: String) {
        guard case .failure(let problems) = Self.read(text) else {
            Issue.record("accepted \(text)")
            return
        }
        #expect(problems.description.contains(message), "\(problems)")
    }
}
