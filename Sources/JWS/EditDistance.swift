/// How far apart two words are, for "did you mean" hints: the Levenshtein distance, bounded.
public enum EditDistance {
    /// Whether the edit distance of `a` and `b` is at most `limit`.
    public static func within(_ a: String, _ b: String, atMost limit: Int) -> Bool {
        let (a, b) = (Array(a), Array(b))
        guard abs(a.count - b.count) <= limit else { return false }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count] <= limit
    }

    /// The first of `candidates` within `limit` edits of `word` (ignoring case), if any.
    public static func nearest(to word: String, in candidates: [String], atMost limit: Int = 2) -> String? {
        candidates.first { within(word.lowercased(), $0.lowercased(), atMost: limit) }
    }
}
