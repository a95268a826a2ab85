// ProxyCredentials: the secrets in the proxy settings libcurl reads from
// the environment (http_proxy, https_proxy, all_proxy, in either case). A
// proxy URL may carry a user and password, and curl's message about a
// proxy it cannot use ("Unsupported proxy syntax in '…'") quotes the whole
// setting: as every curl message becomes a reason (STATUS, KEY.state, the
// journal), each process that sends through curl gives these to its
// SecretRedactor. Pure.

enum ProxyCredentials {
    /// For each proxy setting with a user part (`[scheme://]user[:password]@host`):
    /// the whole setting, the user part and the password.
    static func secrets(in environment: [String: String]) -> [String] {
        environment.filter { name, _ in
            let lowered = name.lowercased()
            return lowered.hasSuffix("_proxy") && lowered != "no_proxy"
        }.values.sorted().flatMap { value -> [String] in
            let start = value.firstRange(of: "://")?.upperBound ?? value.startIndex
            guard let at = value[start...].lastIndex(of: "@"), start < at else { return [] }
            let user = value[start..<at]
            let password = user.firstIndex(of: ":").map { user[user.index(after: $0)...] } ?? ""
            return [value, String(user), String(password)].filter { !$0.isEmpty }
        }
    }
}
