import Hummingbird
import JWS
import Postback
import Store

/// `GET /v1/intake` (what became of every postback received) and `GET /v1/postbacks/{identifier}` (one postback with
/// every copy received).
enum PostbackRoutes {
    /// The longest identifier looked up: Apple's are UUIDs (36 characters).
    static let maximumIdentifier = 128
    /// The most copies of a postback one answer lists.
    static let maximumCopies = 1000

    static func add(to api: PrivateAPI, store: StoreDatabase, verifier: PostbackVerifier, appRules: AppPolicyRefresher) {
        api.read.get("intake") { request, context in
            let query = try intakeQuery(try await ReportRoutes.parameters(request, context: context, store: store))
            try context.requireApp(query.app)
            let format = try QueryParameters.format(request)
            let table = try await store.reports.intake(query)
            return JSONResponse.make(text: format.render(table), contentType: format.contentType,
                                     headers: [.init("Countersign-Time-Zone")!: query.timeZone.identifier, .init("Countersign-Day-Basis")!: DayBasis.arrival.rawValue])
        }
        api.read.get("postbacks/:identifier") { request, context in
            try QueryParameters.refuseUnknown(request, allowed: ["copies_after", "copies_limit"])
            let identifier = context.parameters.get("identifier") ?? ""
            guard !identifier.isEmpty, identifier.utf8.count <= maximumIdentifier else {
                throw APIError(.badRequest, .badParameter, "identifier: must be a postback-identifier or transaction-id (at most \(maximumIdentifier) characters)")
            }
            let after = try QueryParameters.after(request, what: "receipt", name: "copies_after")
            let limit = try QueryParameters.limit(request, default: 100, name: "copies_limit", maximum: maximumCopies)
            // A key limited to apps sees only their postbacks; others are as if not stored.
            let histories = try await store.ledger.history(identifier: identifier, copiesAfter: after, copies: limit).filter { history in
                history.postback["advertised_item_id"]?.int64.map { context.grant?.covers(app: AppID($0)) ?? true } ?? false
            }
            guard !histories.isEmpty else {
                throw APIError(.notFound, .postbackNotFound, "no stored postback has postback-identifier or transaction-id \(identifier)")
            }
            return JSONResponse.make(JSONObject([
                JSONMember(key: "identifier", value: .string(identifier)),
                JSONMember(key: "postbacks", value: .array(histories.map { .object(document($0, verifier: verifier, policy: appRules.policy)) })),
            ]))
        }
    }

    static func intakeQuery(_ pairs: [(String, String)]) throws -> IntakeQuery {
        do {
            return try IntakeQuery.parse(pairs, extraAllowed: ["format"])
        } catch {
            throw APIError(.badRequest, .badParameter, error.description)
        }
    }

    /// A history as JSON: the stored row, the verification report of its stored copy (checked again now, with the keys
    /// pinned now), every copy with the unsigned fields where it differs from the stored copy, and the decoded events.
    static func document(_ history: PostbackHistory, verifier: PostbackVerifier, policy: TrustPolicy) -> JSONObject {
        let results = history.copies.map { verifier.verify($0.body) }
        let stored = zip(history.copies, results).first { $0.0.isStored }?.1
        let storedUnsigned = stored?.postback?.unsignedFields ?? JSONObject()
        var document = JSONObject()
        document.set("postback", .object(history.postback))
        document.set("verification", stored.map { .object(VerificationReport.document($0, policy: policy)) } ?? .null)
        document.set("copies", .array(zip(history.copies, results).map { copy, result in
            var object = copy.receipt
            object.set("stored_copy", .bool(copy.isStored))
            object.set("unsigned_changes", .object(changes(from: storedUnsigned, to: result.postback?.unsignedFields ?? JSONObject())))
            return .object(object)
        }))
        document.set("copies_total", .number(String(history.copiesTotal)))
        // The cursor for the next page of copies, while there are more than this answer lists.
        document.set("next_copies_after", history.nextCopiesAfter.map { .number(String($0)) } ?? .null)
        document.set("events", .array(history.events.map { .object($0) }))
        return document
    }

    /// The unsigned fields whose values differ between two copies: `{"field": {"stored": ..., "copy": ...}}`, absent
    /// values as null.
    static func changes(from stored: JSONObject, to copy: JSONObject) -> JSONObject {
        var keys = stored.members.map(\.key)
        keys += copy.members.map(\.key).filter { !keys.contains($0) }
        var changes = JSONObject()
        for key in keys where stored[key] != copy[key] {
            changes.set(key, .object(JSONObject([
                JSONMember(key: "stored", value: stored[key] ?? .null), JSONMember(key: "copy", value: copy[key] ?? .null),
            ])))
        }
        return changes
    }
}
