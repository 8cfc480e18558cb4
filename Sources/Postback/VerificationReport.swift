import JWS

/// The JSON document `countersign verify` prints and the HTTP API returns for one body.
public enum VerificationReport {
    /// Describes `result` under `policy`: outcome, reason, key, decoded signed and unsigned fields, derived facts.
    public static func document(_ result: VerificationResult, policy: TrustPolicy) -> JSONObject {
        let decision = policy.decide(result)
        var document = JSONObject()
        document.set("outcome", .string(result.outcome.rawValue))
        let reason: FieldProblem? = {
            if case .refuse(let problem) = decision { return problem }
            if case .accept(_, .appNotRegistered?) = decision, let postback = result.postback {
                return FieldProblem(.appNotRegistered, field: "advertised-item-identifier",
                                    "app \(postback.advertisedItemID) is not in this installation's app registry; it is kept, not counted")
            }
            return result.problem
        }()
        document.set("reason", reason.map { .string($0.reason.rawValue) } ?? .null)
        document.set("message", reason.map { .string($0.message) } ?? .null)
        if let field = reason?.field { document.set("field", .string(field)) }
        let accepted: Bool
        let countable: Bool
        switch decision {
        case .accept(let isCountable, _): (accepted, countable) = (true, isCountable)
        case .keep, .refuse: (accepted, countable) = (false, false)
        }
        document.set("accepted", .bool(accepted))
        document.set("countable", .bool(countable))
        var family: PostbackProtocol?
        switch result {
        case .verified(let postback, let signer):
            family = postback.family
            document.set("kid", .string(signer.keyID))
            document.set("environment", .string(signer.environment.rawValue))
        case .unverifiable(let postback, _):
            family = postback.family
            document.set("kid", .null)
            document.set("environment", .null)
        case .invalid(_, let detected):
            family = detected
            document.set("kid", .null)
            document.set("environment", .null)
        }
        document.set("protocol", family.map { .string($0.rawValue) } ?? .null)
        guard let postback = result.postback else {
            document.set("version", .null)
            return document
        }
        document.set("version", postback.version.map { .string($0) } ?? .null)
        document.set("postback_id", .string(postback.postbackID))
        document.set("dedup_key", .string(postback.dedupKey))
        document.set("signed", .object(postback.signedFields))
        document.set("unsigned", .object(postback.unsignedFields))
        document.set("derived", .object(derived(postback)))
        return document
    }

    /// Facts computed from the fields: tier, source-identifier digits, conversion class, interaction, window.
    public static func derived(_ postback: Postback) -> JSONObject {
        var derived = JSONObject()
        let tier = postback.tier
        derived.set("tier", .object(JSONObject([
            JSONMember(key: "min", value: .number(String(tier.minimum))),
            JSONMember(key: "max", value: .number(String(tier.maximum))),
        ])))
        if let digits = postback.sourceDigits {
            derived.set("source_identifier", .string(digits))
            derived.set("source_identifier_digits", .number(String(postback.sourceIdentifier?.count ?? 0)))
            if let sourceIdentifier = postback.sourceIdentifier {
                let characters = Array(sourceIdentifier)
                derived.set("campaign", .string(String(characters.prefix(2))))
                if characters.count > 2 { derived.set("ad_group", .string(String(characters[2]))) }
                if characters.count > 3 { derived.set("creative", .string(String(characters[3]))) }
            }
        }
        derived.set("conversion_class", postback.conversionType.conversionClass.map { .string($0.rawValue) } ?? .null)
        derived.set("window", .number(String(postback.postbackSequenceIndex)))
        derived.set("did_win", .bool(postback.didWin))
        derived.set("interaction", postback.interaction.map { .string($0.rawValue) } ?? .null)
        derived.set("interaction_signed", .bool(postback.adInteractionType == nil && postback.interaction != nil))
        derived.set("signed_fields", .array(postback.signedFields.members.map { .string($0.key) }))
        derived.set("unsigned_fields", .array(postback.unsignedFields.members.map { .string($0.key) }))
        return derived
    }
}
