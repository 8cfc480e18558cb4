import JWS
import Store

extension TokenJobState {
    /// `"counts": {"pending": n, "retrying": n, "done": n, "failed": n}`, as `adservices status` and `/v1/adservices/jobs` show it.
    package static func countsMember(_ counts: [TokenJobState: Int]) -> JSONMember {
        JSONMember(key: "counts", value: .object(JSONObject(allCases.map { JSONMember(key: $0.rawValue, value: .number(String(counts[$0] ?? 0))) })))
    }
}
