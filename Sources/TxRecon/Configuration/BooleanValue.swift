// BooleanValue: yes/no switches in configuration values, as systemd reads
// them (yes/no, true/false, on/off, 1/0, any letter case).
//
// Reports nothing itself: a nil result means "not a boolean", and the caller
// names the file, line and key.

/// A configuration switch.
enum BooleanValue {
    /// Accepted forms, for error messages.
    static let acceptedForms = "yes, no, true, false, on, off, 1 or 0"

    /// true for yes/true/on/1, false for no/false/off/0, nil otherwise.
    static func parse(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "yes", "true", "on", "1": true
        case "no", "false", "off", "0": false
        default: nil
        }
    }
}
