import Hummingbird
import JWS

/// The `after` cursor of `GET /v1/performance`: the dimension cells of the last row of the previous page, as the JSON
/// array base64url (no padding) encodes them. It is opaque to clients (they pass on `Next-After` or `next_after`);
/// the server checks only its shape, since any array of cells is a place in the report's order.
enum PerformanceCursor {
    /// The longest cursor read: eight dimensions of long names, well within.
    static let maximumLength = 16 * 1024

    /// The cursor of the row whose dimension cells are `cells`.
    static func encode(_ cells: [JSONValue]) -> String {
        Base64.encode(Array(JSONValue.array(cells).serialized.utf8), alphabet: .url)
    }

    /// The request's `after`: nil when absent; 400 `bad_parameter` unless it is a cursor of a report with `dimensions`
    /// dimensions (a JSON array of as many texts, numbers or nulls).
    static func read(_ request: Request, dimensions: Int) throws -> [JSONValue]? {
        guard let text = request.uri.queryParameters.get("after") else { return nil }
        let refusal = APIError(.badRequest, .badParameter, "after: must be the Next-After (next_after) of the previous page of the same report")
        guard text.utf8.count <= maximumLength, let bytes = Base64.decode(Array(text.utf8), alphabet: .url),
              case .array(let cells)? = try? JSONParser.parse(bytes, limits: JSONLimits(maximumValues: 64, maximumStringBytes: maximumLength)),
              cells.count == dimensions else {
            throw refusal
        }
        for cell in cells {
            switch cell {
            case .null, .number, .string: continue
            default: throw refusal
            }
        }
        return cells
    }
}
