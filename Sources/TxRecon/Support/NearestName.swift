// NearestName: the known name a mistyped one most likely meant, for the
// command line's "did you mean" hint. The distance is the optimal string
// alignment form of Damerau-Levenshtein: inserting, deleting or changing a
// character, or swapping two neighbours, counts one, so `stauts` is one
// edit from `status`. Public for the executable.

package enum NearestName {
    /// The name in `names` nearest to `typed`, when it is near enough to be
    /// a slip: at most one edit per three characters typed, and at least
    /// one. Ties go to the name first in alphabetical order; nil when none
    /// is near (a word that is no command at all gets no suggestion).
    package static func suggestion(for typed: String, among names: [String]) -> String? {
        let allowed = max(1, typed.count / 3)
        let ranked = names.map { (name: $0, distance: distance(typed, $0)) }
            .filter { $0.distance <= allowed }
            .sorted { ($0.distance, $0.name) < ($1.distance, $1.name) }
        return ranked.first?.name
    }

    /// Edits from `a` to `b`, counted over characters.
    static func distance(_ a: String, _ b: String) -> Int {  // internal for testing
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        // Three rows of the table: the one before the previous is needed
        // for a swap.
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let change = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + change)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }
}
