// DestinationName: what a destination may be called. The name is a file
// name (destinations/NAME.conf, the spool's destinations/NAME/), a journal
// field and a metrics label value, so it is kept to characters that need no
// escaping in any of them.

enum DestinationName {
    static let maximumLength = 32

    static func isValid(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= maximumLength, name != Destination.primaryName,
              isLetterOrDigit(first) else { return false }
        return name.utf8.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
