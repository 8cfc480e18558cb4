import Hummingbird
import JWS
import NIOCore
import Postback

/// The error codes of the HTTP API besides verification reasons (``VerificationReason``); docs/openapi.yaml lists them.
enum APIErrorCode: String, CaseIterable {
    case advertiserAppTaken = "advertiser_app_taken"
    case alertRuleLimit = "alert_rule_limit"
    case alertRuleNotFound = "alert_rule_not_found"
    case advertiserLimit = "advertiser_limit"
    case advertiserNotFound = "advertiser_not_found"
    case apiKeyInQuery = "api_key_in_query"
    case appNotAllowed = "app_not_allowed"
    case appNotRegistered = "app_not_registered"
    case badApp = "bad_app"
    case badParameter = "bad_parameter"
    case chartLibraryMissing = "chart_library_missing"
    case forwardRuleHasEntries = "forward_rule_has_entries"
    case forwardRuleLimit = "forward_rule_limit"
    case forwardRuleNotFound = "forward_rule_not_found"
    case forwardTemplateInUse = "forward_template_in_use"
    case forwardTemplateLimit = "forward_template_limit"
    case forwardTemplateNotFound = "forward_template_not_found"
    case forwardTemplateShipped = "forward_template_shipped"
    case forwardTestNoPostback = "forward_test_no_postback"
    case invalidAPIKey = "invalid_api_key"
    case invalidIAdDictionary = "invalid_iad_dictionary"
    case invalidMapping = "invalid_mapping"
    case insufficientScope = "insufficient_scope"
    case internalError = "internal_error"
    case invalidSpend = "invalid_spend"
    case invalidToken = "invalid_token"
    case malformedRequest = "malformed_request"
    case methodNotAllowed = "method_not_allowed"
    case missingAPIKey = "missing_api_key"
    case nameNotFound = "name_not_found"
    case notFound = "not_found"
    case payloadTooLarge = "payload_too_large"
    case postbackNotFound = "postback_not_found"
    case queueFull = "queue_full"
    case rateLimited = "rate_limited"
    case schemaNotFound = "schema_not_found"
    case serverBusy = "server_busy"
    case shuttingDown = "shutting_down"
    case storageFailing = "storage_failing"
    case storageUnavailable = "storage_unavailable"
    case tooManyGroups = "too_many_groups"
    case tooManyRequests = "too_many_requests"
}

/// An HTTP error with the JSON body every route uses: `{"error": "<code>", "message": "..."}`.
package struct APIError: HTTPResponseError {
    package let status: HTTPResponse.Status
    let code: String
    package let message: String
    let headers: HTTPFields

    init(_ status: HTTPResponse.Status, _ code: APIErrorCode, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code.rawValue
        self.message = message
        self.headers = headers
    }

    /// A postback refused for `reason`; its stable code is the error code.
    init(_ status: HTTPResponse.Status, _ reason: VerificationReason, _ message: String) {
        self.status = status
        self.code = reason.rawValue
        self.message = message
        self.headers = [:]
    }

    /// 413 for a body over `limit`; the connection closes after it, so the rest of the body is never read.
    static func tooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, .payloadTooLarge, "the body is larger than \(limit) bytes", headers: [.connection: "close"])
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONResponse.make(status: status, JSONObject([
            JSONMember(key: "error", value: .string(code)),
            JSONMember(key: "message", value: .string(message)),
        ]), headers: headers)
    }
}

/// JSON responses built from ``JSONObject`` without Codable round trips.
enum JSONResponse {
    static func make(status: HTTPResponse.Status = .ok, _ object: JSONObject, headers: HTTPFields = [:]) -> Response {
        make(status: status, text: JSONValue.object(object).serialized, headers: headers)
    }

    static func make(status: HTTPResponse.Status = .ok, text: String, contentType: String = "application/json", headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = contentType
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
