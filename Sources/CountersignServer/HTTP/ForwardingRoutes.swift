import Foundation
import Hummingbird
import JWS
import Postback
import Store

/// `/v1/forwarding/...`: forwarding rules, their delivery templates and test deliveries, the outbox's status, its dead
/// letters and retries (all with the admin scope, and a key for every app: forwarding spans every app).
enum ForwardingRoutes {
    static let maximumBodySize = 16 * 1024

    static func add(to api: PrivateAPI, store: StoreDatabase, maximumRules: Int) {
        api.admin.get("forwarding/rules") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let rules = try await store.forwarding.rules()
            return JSONResponse.make(JSONObject([JSONMember(key: "rules", value: .array(rules.map { .object($0.json) }))]))
        }
        api.admin.put("forwarding/rules/:name") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            let body = try await RequestBody.collect(request, limit: maximumBodySize)
            let (rule, header, keepTemplate) = try rule(name: name, body: Array(buffer: body))
            do {
                try await store.forwarding.set(rule, header: header, keepTemplate: keepTemplate, maximumRules: maximumRules)
            } catch let problem as ForwardRule.Problem {
                throw APIError(.badRequest, .badParameter, problem.description)
            } catch let refusal as ForwardingOutbox.Refusal {
                switch refusal {
                case .noSuchTemplate: throw APIError(.badRequest, .badParameter, "template: \(refusal.description)")
                case .secretNeedsHeader: throw APIError(.badRequest, .badParameter, "header: \(refusal.description)")
                default: throw APIError(.conflict, .forwardRuleLimit, refusal.description)
                }
            }
            let stored = try await store.forwarding.rules().first { $0.name == name }
            return JSONResponse.make(stored?.json ?? rule.json)
        }
        api.admin.delete("forwarding/rules/:name") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: ["drop_entries"])
            let name = context.parameters.get("name") ?? ""
            let drop = try QueryParameters.flag(request, "drop_entries")
            let removed: Int?
            do { removed = try await store.forwarding.remove(name, dropEntries: drop) } catch let refusal as ForwardingOutbox.Refusal {
                throw APIError(.conflict, .forwardRuleHasEntries, refusal.description)
            }
            guard let dropped = removed else {
                throw APIError(.notFound, .forwardRuleNotFound, "no forwarding rule is named \(name); GET /v1/forwarding/rules lists them")
            }
            return JSONResponse.make(JSONObject([
                JSONMember(key: "removed", value: .string(name)), JSONMember(key: "dropped_entries", value: .number(String(dropped))),
            ]))
        }
        api.admin.post("forwarding/rules/:name/test") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            let delivery: ForwardDelivery?
            do { delivery = try await store.forwarding.testDelivery(rule: name) } catch let refusal as ForwardingOutbox.Refusal {
                throw APIError(.conflict, .forwardTestNoPostback, refusal.description)
            }
            guard let delivery else {
                throw APIError(.notFound, .forwardRuleNotFound, "no forwarding rule is named \(name); GET /v1/forwarding/rules lists them")
            }
            return JSONResponse.make(await TestDelivery.send(delivery))
        }
        DeliveryTemplateRoutes.add(to: api, store: store)
        api.admin.get("forwarding/status") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: ["format"])
            let format = try QueryParameters.format(request)
            return JSONResponse.make(text: format.render(try await store.forwarding.status()), contentType: format.contentType)
        }
        api.admin.get("forwarding/entries") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: ["state", "partner", "limit", "format"])
            let stateName = request.uri.queryParameters.get("state") ?? ForwardEntryState.dead.rawValue
            guard let state = ForwardEntryState(rawValue: stateName) else {
                throw APIError(.badRequest, .badParameter, "state: must be one of \(ForwardEntryState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let format = try QueryParameters.format(request)
            let limit = try QueryParameters.limit(request, default: 100)
            let entries = try await store.forwarding.entries(state: state, partner: request.uri.queryParameters.get("partner"), limit: limit)
            return JSONResponse.make(text: format.render(entries), contentType: format.contentType)
        }
        api.admin.post("forwarding/backfill") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let body = try await RequestBody.collect(request, limit: maximumBodySize)
            let (partner, since) = try backfillSelection(Array(buffer: body))
            guard let queued = try await store.forwarding.backfill(partner: partner, since: since) else {
                throw APIError(.notFound, .forwardRuleNotFound, "no forwarding rule is named \(partner); GET /v1/forwarding/rules lists them")
            }
            return JSONResponse.make(JSONObject([JSONMember(key: "queued", value: .number(String(queued)))]))
        }
        api.admin.post("forwarding/retry") { request, context in
            try context.requireEveryApp("forwarding")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let body = try await RequestBody.collect(request, limit: maximumBodySize)
            let (partner, ids) = try retrySelection(Array(buffer: body))
            guard let retried = try await store.forwarding.retry(partner: partner, ids: ids) else {
                throw APIError(.notFound, .forwardRuleNotFound, "no forwarding rule is named \(partner ?? ""); GET /v1/forwarding/rules lists them")
            }
            return JSONResponse.make(JSONObject([JSONMember(key: "retried", value: .number(String(retried)))]))
        }
    }

    /// The body of `POST /v1/forwarding/retry`: `{}` (every dead letter), `{"partner": "acme"}`, `{"ids": [1, 2]}`, or both.
    static func retrySelection(_ body: [UInt8]) throws -> (partner: String?, ids: [Int64]) {
        let usage = #"the body must be a JSON object such as {"partner": "acme-mmp"} or {"ids": [17, 18]}, or {} for every dead letter"#
        guard let object = (try? JSONParser.parse(body))?.object else { throw APIError(.badRequest, .badParameter, usage) }
        for member in object.members where !["partner", "ids"].contains(member.key) {
            throw APIError(.badRequest, .badParameter, "\(member.key): unknown field; \(usage)")
        }
        var partner: String?
        if let value = object["partner"], value != .null {
            guard let text = value.string else { throw APIError(.badRequest, .badParameter, "partner: must be a rule name") }
            partner = text
        }
        var ids: [Int64] = []
        if let value = object["ids"], value != .null {
            guard case .array(let items) = value, items.count <= 1000 else {
                throw APIError(.badRequest, .badParameter, "ids: must be a list of at most 1000 entry ids")
            }
            ids = try items.map { item in
                guard let id = item.wholeNumber, id > 0 else {
                    throw APIError(.badRequest, .badParameter, "ids: each must be an entry id, a positive integer")
                }
                return id
            }
        }
        return (partner, ids)
    }

    /// The body of `POST /v1/forwarding/backfill`: `{"partner": "acme-mmp", "since": "2026-11-20T00:00:00Z"}`.
    static func backfillSelection(_ body: [UInt8]) throws -> (partner: String, since: Date) {
        let usage = #"the body must be a JSON object such as {"partner": "acme-mmp", "since": "2026-11-20T00:00:00Z"}"#
        guard let object = (try? JSONParser.parse(body))?.object else { throw APIError(.badRequest, .badParameter, usage) }
        for member in object.members where !["partner", "since"].contains(member.key) {
            throw APIError(.badRequest, .badParameter, "\(member.key): unknown field; \(usage)")
        }
        guard let partner = object["partner"]?.string else { throw APIError(.badRequest, .badParameter, "partner: required; \(usage)") }
        guard let text = object["since"]?.string, let since = Timestamp.parse(text) else {
            throw APIError(.badRequest, .badParameter, "since: required, a date or time such as 2026-11-20 or 2026-11-20T08:00:00Z")
        }
        return (partner, since)
    }

    /// The body `{"url": ..., "ad_network": ..., "app": ..., "protocol": "aak"|"skan", "environment": ..., "concurrency": n,
    /// "rate": n, "max_age": seconds, "timeout": seconds, "template": name, "header": {"name": ..., "value": ...}}`; only
    /// `url` is required. `template` absent keeps an existing rule's template (a new rule's is `original`); `header`
    /// absent keeps the rule's header and secret, null removes them.
    static func rule(name: String, body: [UInt8]) throws -> (ForwardRule, PartnerHeader.Change, keepTemplate: Bool) {
        let usage = #"the body must be a JSON object such as {"url": "https://partner.example/postbacks", "ad_network": "example123.skadnetwork", "app": 1108187390, "protocol": "aak", "environment": "production", "concurrency": 4, "rate": 50, "max_age": 777600, "timeout": 10, "max_entries": 1000000, "template": "enriched", "header": {"name": "Authorization", "value": "Bearer ..."}}"#
        guard let object = (try? JSONParser.parse(body))?.object else { throw APIError(.badRequest, .badParameter, usage) }
        let known: Set<String> = ["url", "ad_network", "app", "protocol", "environment", "concurrency", "rate", "max_age", "timeout", "max_entries", "template", "header"]
        for member in object.members where !known.contains(member.key) {
            throw APIError(.badRequest, .badParameter, "\(member.key): unknown field; \(usage)")
        }
        func present(_ key: String) -> JSONValue? {
            guard let value = object[key], value != .null else { return nil }
            return value
        }
        func text(_ key: String) throws -> String? {
            guard let value = present(key) else { return nil }
            guard let text = value.string else { throw APIError(.badRequest, .badParameter, "\(key): must be text") }
            return text
        }
        func number(_ key: String) throws -> Double? {
            guard let value = present(key) else { return nil }
            guard case .number(let text) = value, let number = Double(text) else { throw APIError(.badRequest, .badParameter, "\(key): must be a number") }
            return number
        }
        guard let url = try text("url") else { throw APIError(.badRequest, .badParameter, "url: required; \(usage)") }
        var rule = ForwardRule(name: name, url: url, adNetwork: try text("ad_network"))
        if let value = present("app") {
            guard let app = value.wholeNumber else { throw APIError(.badRequest, .badParameter, "app: must be an App Store id") }
            rule.app = AppID(app)
        }
        if let name = try text("protocol") {
            guard let value = PostbackProtocol(rawValue: name) else { throw APIError(.badRequest, .badParameter, "protocol: must be aak or skan") }
            rule.postbackProtocol = value
        }
        if let name = try text("environment") {
            guard let value = ForwardRule.Environment(rawValue: name) else {
                throw APIError(.badRequest, .badParameter, "environment: must be one of \(ForwardRule.Environment.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            rule.environment = value
        }
        if let value = present("concurrency") {
            guard let concurrency = value.wholeNumber, abs(concurrency) < 1 << 31 else {
                throw APIError(.badRequest, .badParameter, "concurrency: must be a whole number")
            }
            rule.concurrency = Int(concurrency)
        }
        rule.rate = try number("rate") ?? rule.rate
        rule.maximumAge = try number("max_age") ?? rule.maximumAge
        rule.timeout = try number("timeout") ?? rule.timeout
        if let value = present("max_entries") {
            guard let entries = value.wholeNumber, abs(entries) < 1 << 40 else {
                throw APIError(.badRequest, .badParameter, "max_entries: must be a whole number")
            }
            rule.maximumEntries = Int(entries)
        }
        let template = try text("template")
        rule.template = template ?? rule.template
        return (rule, try headerChange(object["header"]), template == nil)
    }

    /// `header`: absent keeps the rule's header, null removes it, `{"name": ..., "value": ...}` sets it. The value is
    /// never echoed, in an answer or an error.
    static func headerChange(_ value: JSONValue?) throws -> PartnerHeader.Change {
        guard let value else { return .keep }
        if value == .null { return .remove }
        let usage = #"header: must be {"name": "Authorization", "value": "Bearer ..."} to set the partner's header, or null to remove it"#
        guard let object = value.object, object.members.count == 2, let name = object["name"]?.string, let secret = object["value"]?.string else {
            throw APIError(.badRequest, .badParameter, usage)
        }
        do { return .set(try PartnerHeader(name: name, value: secret)) } catch {
            throw APIError(.badRequest, .badParameter, error.description)
        }
    }
}
