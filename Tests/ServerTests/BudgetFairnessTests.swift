import Logging
import MetricsTestKit
import Testing
import TestSupport
@testable import CountersignServer

/// A global budget cannot be emptied for everyone by a few sources (finding: six addresses at 5 requests a second kept
/// `--unverifiable-global-budget` spent, and every postback nobody could verify yet was answered 429, from every source,
/// a fresh one too). Busy sources share at most three quarters of the global budget; the rest is kept for sources that
/// have sent nothing for a minute; no 60 s admit more than the budget; it shows in the metrics and the log. In memory,
/// with the clock passed in.
@Suite struct BudgetFairnessTests {
    static let busy = (1...6).map { "198.51.100.\($0)/32" }

    /// Whole seconds, rounded up, as `Retry-After` says them.
    static func seconds(_ wait: Duration) -> Int {
        Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
    }

    /// The most admitted in any 60 s (closed) of `times`, which are in order.
    static func mostInAMinute(_ times: [Duration]) -> Int {
        var first = 0, most = 0
        for (last, time) in times.enumerated() {
            while times[first] < time - .seconds(60) { first += 1 }
            most = max(most, last - first + 1)
        }
        return most
    }

    @Test(arguments: [1, 2, 5, 300, 1200])
    func sixBusySourcesNeverRefuseOneThatHasSentNothing(global: Int) throws {
        let metrics = TestMetrics()
        let log = RecordingLogHandler()
        // Each busy source within its own budget (5 a second), so only the global one holds them back.
        let budget = IntakeBudget(kind: "unverifiable", perSourcePerMinute: 300, globalPerMinute: global, metrics: metrics,
                                  logger: Logger(label: "test") { _ in log })
        #expect(budget.reserve == max(1, global / 4))
        #expect(budget.shared + budget.reserve == global)
        let start = ContinuousClock.now
        func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }
        var admitted: [Duration] = []
        /// One round of the flood: each busy source once, 10 ms apart; a round every 200 ms.
        func flood(_ round: Int) {
            for (index, source) in Self.busy.enumerated() {
                let time = 200 * round + 10 * index
                if budget.spend(source, now: at(time)) == nil { admitted.append(.milliseconds(time)) }
            }
        }
        let reserveUsed = try metrics.expectCounter("countersign_budget_reserve_used_total", [("kind", "unverifiable")])
        let overGlobal = try metrics.expectCounter("countersign_budget_exceeded_total", [("kind", "unverifiable"), ("scope", "global")])
        let overReserve = try metrics.expectCounter("countersign_budget_exceeded_total", [("kind", "unverifiable"), ("scope", "reserve")])
        let saturated = try metrics.expectGauge("countersign_budget_saturated", [("kind", "unverifiable")])
        #expect(saturated.lastValue == 0)

        flood(0)
        // A busy source's first request is one from a source that had sent nothing, and may draw on the reserve; none
        // of the 3,594 requests after it does.
        let drawnAtFirst = reserveUsed.totalValue
        #expect(drawnAtFirst <= 6)
        for round in 1..<600 { flood(round) }
        #expect(reserveUsed.totalValue == drawnAtFirst)
        #expect(overGlobal.totalValue > 0)
        #expect(saturated.lastValue == 1)

        // 120 s in, sources that have sent nothing are admitted, from the reserve, until it is spent.
        let refusedBefore = overReserve.totalValue
        var fresh = 0
        var refused: (source: String, wait: Duration)?
        for index in 0...global {
            let source = "2001:db8:\(index)::/64"
            if let wait = budget.spend(source, now: at(120_000)) {
                refused = (source, wait)
                break
            }
            fresh += 1
            admitted.append(.seconds(120))
        }
        #expect((1...budget.reserve).contains(fresh))
        #expect(reserveUsed.totalValue == drawnAtFirst + Int64(fresh))
        #expect(overReserve.totalValue == refusedBefore + 1)

        // The one refused is told when to come back; the flood goes on; when it comes back it is admitted.
        let (late, wait) = try #require(refused)
        let seconds = Self.seconds(wait)
        #expect((1...61).contains(seconds))
        let retry = 120_000 + 1000 * seconds
        var round = 600
        while 200 * round < retry {
            flood(round)
            round += 1
        }
        let readmitted = budget.spend(late, now: at(retry)) == nil
        #expect(readmitted)
        if readmitted { admitted.append(.milliseconds(retry)) }

        // Never more than the budget in any 60 s, fresh sources and the flood together.
        #expect(Self.mostInAMinute(admitted) <= global)
        // The operator is told, at most once a minute.
        let warnings = log.lines.filter { $0.hasPrefix("busy sources have spent the budget they share") }
        #expect(!warnings.isEmpty)
        #expect(warnings.count <= retry / 60_000 + 1)
        #expect(warnings.allSatisfy { $0.contains("kind=unverifiable") })
    }

    /// The finding's flood at every budget's default settings: a new source is still admitted.
    @Test func theFindingsFloodRefusesNoNewSourceAtTheDefaults() {
        let settings = ServerSettings()
        let defaults = [
            ("unverifiable", settings.unverifiableBudget, settings.unverifiableGlobalBudget),
            ("rejected_body", settings.rejectedBodyBudget, settings.rejectedGlobalBudget),
            ("rejected_receipt", settings.rejectedReceiptBudget, settings.rejectedReceiptGlobalBudget),
            ("apple_ads_submission", settings.publicRecordBudget, settings.publicRecordGlobalBudget),
        ]
        for (kind, perSource, global) in defaults {
            let budget = IntakeBudget(kind: kind, perSourcePerMinute: perSource, globalPerMinute: global, metrics: TestMetrics())
            let start = ContinuousClock.now
            var admitted: [Duration] = []
            for round in 0..<600 {
                for (index, source) in Self.busy.enumerated() {
                    let time = Duration.milliseconds(200 * round + 10 * index)
                    if budget.spend(source, now: start + time) == nil { admitted.append(time) }
                }
            }
            #expect(budget.spend("203.0.113.9/32", now: start + .seconds(120)) == nil, "\(kind)")
            admitted.append(.seconds(120))
            #expect(Self.mostInAMinute(admitted) <= global, "\(kind)")
        }
    }

    /// "A request within both spends from both; one beyond either spends nothing": a request the global budget refuses
    /// gives its source's token back.
    @Test func aRequestTheGlobalBudgetRefusesSpendsNothingFromItsSource() throws {
        let metrics = TestMetrics()
        let budget = IntakeBudget(kind: "test", perSourcePerMinute: 1, globalPerMinute: 1, metrics: metrics)
        let now = ContinuousClock.now
        #expect(budget.spend("a", now: now) == nil)
        let wait = budget.spend("b", now: now)
        #expect(wait == .seconds(61))
        // b's own token (a burst of 1, one a minute) is still there.
        #expect(budget.perSource.acquire("b", now: now) == nil)
        #expect(try metrics.expectCounter("countersign_budget_exceeded_total", [("kind", "test"), ("scope", "reserve")]).totalValue == 1)
        #expect(try metrics.expectCounter("countersign_budget_exceeded_total", [("kind", "test"), ("scope", "source")]).totalValue == 0)
    }

    /// A source the reserve refused that waits its `Retry-After` is admitted; one that asks again sooner has to keep
    /// quiet for a minute.
    @Test func aRefusedSourceThatWaitsIsAdmittedAndOneThatInsistsIsNot() throws {
        let budget = IntakeBudget(kind: "test", perSourcePerMinute: 60, globalPerMinute: 1, metrics: TestMetrics())
        let start = ContinuousClock.now
        #expect(budget.spend("a", now: start) == nil)
        let patientWait = try #require(budget.spend("patient", now: start))
        let insistentWait = try #require(budget.spend("insistent", now: start))
        #expect(patientWait == .seconds(61) && insistentWait == .seconds(61))
        // The insistent one asks every second; each time it is busy, and busy sources have no share of a budget of 1.
        for second in 1...61 { #expect(budget.spend("insistent", now: start + .seconds(second)) != nil) }
        #expect(budget.spend("patient", now: start + patientWait) == nil)
        // After a minute of silence the insistent one is quiet again; the next refill (a minute after the patient one's)
        // is its.
        #expect(budget.spend("insistent", now: start + .seconds(122)) == nil)
    }

    /// Budgets of 0 refuse everything, without dividing by zero, and say to come back in a minute.
    @Test func zeroBudgetsRefuseEverything() throws {
        let metrics = TestMetrics()
        let noGlobal = IntakeBudget(kind: "none", perSourcePerMinute: 60, globalPerMinute: 0, metrics: metrics)
        let noSource = IntakeBudget(kind: "nothing", perSourcePerMinute: 0, globalPerMinute: 300, metrics: metrics)
        let now = ContinuousClock.now
        #expect(noGlobal.spend("a", now: now) == .seconds(60))
        #expect(noSource.spend("a", now: now) == .seconds(60))
        #expect(try metrics.expectCounter("countersign_budget_exceeded_total", [("kind", "none"), ("scope", "global")]).totalValue == 1)
        #expect(try metrics.expectCounter("countersign_budget_exceeded_total", [("kind", "nothing"), ("scope", "source")]).totalValue == 1)
    }

    /// What the budget remembers is bounded; forgetting sources never lets more than the budget in.
    @Test func manySourcesFitInBoundedMemoryAndStillWithinTheBudget() {
        let budget = IntakeBudget(kind: "test", perSourcePerMinute: 60, globalPerMinute: 20, metrics: TestMetrics(), capacity: 8)
        let start = ContinuousClock.now
        var admitted: [Duration] = []
        for request in 0..<5000 {
            let time = Duration.milliseconds(37 * request)
            if budget.spend("10.0.\(request % 97).\(request % 13)/32", now: start + time) == nil { admitted.append(time) }
        }
        #expect(!admitted.isEmpty)
        #expect(Self.mostInAMinute(admitted) <= 20)
    }
}
