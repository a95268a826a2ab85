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

    /// One or more of `Production`, `Sandbox`, `Xcode` and `LocalTesting`,
    /// spelled as Apple spells `environment` in payloads, separated by
    /// spaces; a repeated one counts once. Xcode and LocalTesting, which
    /// skip the signature checks, cannot be listed with Production or
    /// Sandbox: a production daemon must never accept unsigned data.
    static func signedDataEnvironments(_ text: String) throws(InvalidValue) -> [SignedDataEnvironment] {
        var environments: [SignedDataEnvironment] = []
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            guard let environment = SignedDataEnvironment(rawValue: String(word)) else {
                let names = SignedDataEnvironment.allCases.map(\.rawValue).joined(separator: ", ")
                throw InvalidValue(message: "\"\(word)\" is not an App Store environment; write one or more of \(names)")
            }
            if !environments.contains(environment) { environments.append(environment) }
        }
        guard !environments.isEmpty else {
            throw InvalidValue(message: "\"\(text)\" lists no environment; write \"Production Sandbox\" on a "
                               + "production server")
        }
        let unsigned = environments.filter { !$0.checksSignatures }, signed = environments.filter(\.checksSignatures)
        guard unsigned.isEmpty || signed.isEmpty else {
            throw InvalidValue(message: "\"\(text)\" lists \(unsigned.map(\.rawValue).joined(separator: " and ")), "
                + "whose data carries no App Store signature, with \(signed.map(\.rawValue).joined(separator: " and ")): "
                + "a daemon that takes App Store data must never take unsigned data; list them in separate configurations")
        }
        return environments
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
