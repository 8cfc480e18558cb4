import Foundation
import Hummingbird
import JWS
import Store

/// `/v1/alerts/...`: alert rules, what each would read now, the outbox's status and retries of dead alerts (admin
/// scope, and a key for every app: rules such as `untrusted_share` span every app).
enum AlertRoutes {
    static let maximumBodySize = 16 * 1024

    static func add(to api: PrivateAPI, store: StoreDatabase) {
        api.admin.get("alerts/rules") { request, context in
            try context.requireEveryApp("alerts")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let rules = try await store.alerts.rules()
            return JSONResponse.make(JSONObject([JSONMember(key: "rules", value: .array(rules.map { .object($0.json) }))]))
        }
        api.admin.put("alerts/rules/:name") { request, context in
            try context.requireEveryApp("alerts")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            let body = try await RequestBody.collect(request, limit: maximumBodySize)
            let usage = #"the body must be a JSON object such as {"kind": "silence", "url": "https://hooks.slack.com/services/...", "format": "slack", "app": 1108187390, "hours": 6}"#
            guard let object = (try? JSONParser.parse(Array(buffer: body)))?.object else { throw APIError(.badRequest, .badParameter, usage) }
            let rule: AlertRule
            do {
                rule = try AlertRule(name: name, json: object)
                try await store.alerts.set(rule)
            } catch let problem as AlertRule.Problem {
                throw APIError(.badRequest, .badParameter, problem.description)
            } catch let refusal as AlertBook.Refusal {
                throw APIError(.conflict, .alertRuleLimit, refusal.description)
            }
            let stored = try await store.alerts.rules().first { $0.name == name }
            return JSONResponse.make(stored?.json ?? rule.json)
        }
        api.admin.delete("alerts/rules/:name") { request, context in
            try context.requireEveryApp("alerts")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            guard let dropped = try await store.alerts.remove(name) else { throw notFound(name) }
            return JSONResponse.make(JSONObject([
                JSONMember(key: "removed", value: .string(name)), JSONMember(key: "dropped_alerts", value: .number(String(dropped))),
            ]))
        }
        api.admin.get("alerts/rules/:name/reading") { request, context in
            try context.requireEveryApp("alerts")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let name = context.parameters.get("name") ?? ""
            guard let rule = try await store.alerts.rules().first(where: { $0.name == name }) else { throw notFound(name) }
            return JSONResponse.make(try await store.alerts.reading(rule).json)
        }
        api.admin.get("alerts/status") { request, context in
            try context.requireEveryApp("alerts")
            try QueryParameters.refuseUnknown(request, allowed: ["format"])
            let format = try QueryParameters.format(request)
            return JSONResponse.make(text: format.render(try await store.alerts.status()), contentType: format.contentType)
        }
        api.admin.post("alerts/retry") { request, context in
            try context.requireEveryApp("alerts")
            try QueryParameters.refuseUnknown(request, allowed: [])
            let body = try await RequestBody.collect(request, limit: maximumBodySize)
            let usage = #"the body must be a JSON object such as {"rule": "installs-stopped"}, or {} for every dead alert"#
            guard let object = (try? JSONParser.parse(Array(buffer: body)))?.object else { throw APIError(.badRequest, .badParameter, usage) }
            for member in object.members where member.key != "rule" { throw APIError(.badRequest, .badParameter, "\(member.key): unknown field; \(usage)") }
            var rule: String?
            if let value = object["rule"], value != .null {
                guard let text = value.string else { throw APIError(.badRequest, .badParameter, "rule: must be a rule's name") }
                rule = text
            }
            guard let retried = try await store.alerts.retry(rule: rule) else { throw notFound(rule ?? "") }
            return JSONResponse.make(JSONObject([JSONMember(key: "retried", value: .number(String(retried)))]))
        }
    }

    static func notFound(_ name: String) -> APIError {
        APIError(.notFound, .alertRuleNotFound, "no alert rule is named \(name); GET /v1/alerts/rules lists them")
    }

}
