// DestinationName: what a destination or an app may be called. The name is
// a file name (destinations/NAME.conf, apps/NAME.conf, the spool's
// destinations/NAME/ and apps/NAME/), a journal field and a metrics label
// value, so it is kept to characters that need no escaping in any of them.

enum DestinationName {
    static let maximumLength = 32

    /// A destination's name: never `backend`, the main file's `[Backend]`.
    static func isValid(_ name: String) -> Bool { isValid(name, reserved: Destination.primaryName) }

    /// A name of this shape other than `reserved` (the one the main file's
    /// section goes by).
    static func isValid(_ name: String, reserved: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= maximumLength, name != reserved,
              isLetterOrDigit(first) else { return false }
        return name.utf8.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
