// ByteSize: sizes in configuration values ("1M", "512K", "4096"), as
// systemd reads them: K, M, G and T are powers of 1024.
//
// Reports nothing itself: a nil result means "not a size", and the caller
// names the file, line and key.

/// A size in bytes written with an optional binary suffix.
enum ByteSize {
    private static let multipliers: [String: Int] = [
        "": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
    ]

    /// Accepted forms, for error messages.
    static let acceptedForms = #"a size such as "4096", "512K", "1M" or "1G" (K, M, G, T are powers of 1024; an optional B may follow)"#

    /// The number of bytes `text` denotes: a whole number, optionally
    /// followed by K, M, G or T (base 1024) and then an optional B, with
    /// optional spaces before the suffix ("1M", "1 MB", "4096B"). Suffixes are
    /// upper case only, as in systemd. Nil when malformed or beyond `Int.max`.
    static func parse(_ text: String) -> Int? {
        let trimmed = Substring(text).drop { $0 == " " || $0 == "\t" }
        let digits = trimmed.prefix { ("0"..."9").contains($0) }
        var suffix = trimmed.dropFirst(digits.count).trimmingASCIISpaces()
        if suffix.hasSuffix("B") { suffix.removeLast() }
        guard !digits.isEmpty, let number = Int(digits), let multiplier = multipliers[suffix] else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }
}
