import Hummingbird
import JWS
import NIOCore

/// An HTTP error with the JSON body every route uses: `{"error": "<code>", "message": "..."}`.
struct APIError: HTTPResponseError {
    let status: HTTPResponse.Status
    let code: String
    let message: String

    init(_ status: HTTPResponse.Status, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONResponse.make(status: status, JSONObject([
            JSONMember(key: "error", value: .string(code)),
            JSONMember(key: "message", value: .string(message)),
        ]))
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
