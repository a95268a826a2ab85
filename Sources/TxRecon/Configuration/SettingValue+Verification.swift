// SettingValue+Verification: parsers for the [Verification] keys. Each
// throws `InvalidValue` quoting the value and listing what is accepted.

extension SettingValue {
    /// `appstore` or `none`.
    static func verificationMode(_ text: String) throws(InvalidValue) -> VerificationMode {
        guard let mode = VerificationMode(rawValue: text) else {
            throw InvalidValue(message: "\"\(text)\" is not a mode; write appstore (verify signatures) or none")
        }
        return mode
    }

    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`, spelled as Apple
    /// spells `environment` in payloads.
    static func signedDataEnvironment(_ text: String) throws(InvalidValue) -> SignedDataEnvironment {
        guard let environment = SignedDataEnvironment(rawValue: text) else {
            let names = SignedDataEnvironment.allCases.map(\.rawValue).joined(separator: ", ")
            throw InvalidValue(message: "\"\(text)\" is not an App Store environment; write one of \(names)")
        }
        return environment
    }

    /// The App Apple ID: a whole number from 1.
    static func appAppleID(_ text: String) throws(InvalidValue) -> Int64 {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let number = Int64(text), number > 0
        else {
            throw InvalidValue(message: "\"\(text)\" is not an App Apple ID, a whole number such as 1234567890")
        }
        return number
    }

    /// yes/no, true/false, on/off, 1/0.
    static func boolean(_ text: String) throws(InvalidValue) -> Bool {
        guard let value = BooleanValue.parse(text) else {
            throw InvalidValue(message: "\"\(text)\" is not \(BooleanValue.acceptedForms)")
        }
        return value
    }
}
