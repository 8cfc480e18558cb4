import Foundation
import JWS
import Store

/// A test delivery (`countersign forward test`, `POST /v1/forwarding/rules/{name}/test`): one marked body sent through
/// the rule's template and header, and what the partner answered, as JSON. Nothing is queued or counted.
public enum TestDelivery {
    /// Sends `delivery` (made by ``ForwardingOutbox/testDelivery(rule:)``) and describes the exchange; the partner's
    /// secret shows as `(secret)`.
    public static func send(_ delivery: ForwardDelivery) async -> JSONObject {
        let answer = await PartnerRequest.send(delivery, client: PartnerRequest.testClient, test: true)
        let sentBody = (try? JSONParser.parse(delivery.body)) ?? .string(String(decoding: delivery.body, as: UTF8.self))
        return JSONObject([
            JSONMember(key: "rule", value: .string(delivery.partner)),
            JSONMember(key: "url", value: .string(delivery.url)),
            JSONMember(key: "postback_id", value: .number(String(delivery.postbackID))),
            JSONMember(key: "headers", value: .object(JSONObject(PartnerRequest.headers(delivery, test: true, shown: true).map {
                JSONMember(key: $0.name, value: .string($0.value))
            }))),
            JSONMember(key: "body", value: sentBody),
            JSONMember(key: "accepted", value: .bool(answer.failure == nil)),
            JSONMember(key: "status", value: answer.status.map { .number(String($0)) } ?? .null),
            JSONMember(key: "answer", value: .string(redacted(String(decoding: answer.body, as: UTF8.self), delivery.header))),
            JSONMember(key: "error", value: answer.failure.map { .string(redacted($0, delivery.header)) } ?? .null),
        ])
    }

    /// `text` with the partner's secret replaced by `(secret)`: a partner that echoes the request's headers must not
    /// make the answer carry it.
    static func redacted(_ text: String, _ header: PartnerHeader?) -> String {
        guard let header, !header.value.isEmpty else { return text }
        return text.replacingOccurrences(of: header.value, with: "(secret)")
    }
}
