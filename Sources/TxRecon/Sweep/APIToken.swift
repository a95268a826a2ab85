// APIToken: the JSON Web Token that authorizes each App Store Server API
// request ("Generating JSON Web Tokens for API requests" in Apple's
// documentation).
//
//   header  {"alg":"ES256","kid":<KeyID=>,"typ":"JWT"}
//   claims  {"iss":<IssuerID=>,"iat":<now>,"exp":<now + 5 min>,
//            "aud":"appstoreconnect-v1","bid":<BundleID=>}
//
// signed with the In-App Purchase key. A fresh token is made for every
// request, retries included, as Apple asks; tokens live five minutes, well
// under Apple's 60-minute limit, so a leaked one is soon useless. Touches no
// files and logs nothing; a token is a credential and is never logged.

/// Makes signed tokens for one key. Not Sendable: it owns the key.
package final class APITokenIssuer {
    /// The token's lifetime, `exp - iat`: 5 minutes.
    static let lifetime: Int64 = 300
    /// The `aud` claim every App Store Server API token carries.
    static let audience = "appstoreconnect-v1"

    let issuerID: String
    let keyID: String
    let bundleID: String
    private let key: ES256PrivateKey

    package init(issuerID: String, keyID: String, bundleID: String, key: ES256PrivateKey) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.bundleID = bundleID
        self.key = key
    }

    /// A compact JWS issued at `nowMilliseconds` (wall clock, ms since
    /// 1970); nil only when OpenSSL cannot sign (out of memory).
    func token(nowMilliseconds: Int64) -> String? {
        let issuedAt = nowMilliseconds / 1000
        let header = JSONValue.object([
            ("alg", .string("ES256")), ("kid", .string(keyID)), ("typ", .string("JWT")),
        ])
        let claims = JSONValue.object([
            ("iss", .string(issuerID)),
            ("iat", .integer(issuedAt)),
            ("exp", .integer(issuedAt + Self.lifetime)),
            ("aud", .string(Self.audience)),
            ("bid", .string(bundleID)),
        ])
        let signingInput = Base64URL.encode(header.serialized) + "." + Base64URL.encode(claims.serialized)
        guard let signature = key.sign(Array(signingInput.utf8)) else { return nil }
        return signingInput + "." + Base64URL.encode(signature)
    }
}
