// SecretFile: reads a file holding one secret (a bearer token, a signing
// secret), refusing one that other users could read or change.
//
// The file is opened once and its permissions are checked on that same open
// file: it must be a regular file, not readable by others, and writable by
// neither group nor others. One trailing newline is dropped; an empty secret
// is refused. Throws `SecretFile.Failure`, whose messages name the path and
// the fix but never the content. Blocks on disk I/O, like the loader.
import Glibc

/// A file holding one secret.
enum SecretFile {
    /// Secret files larger than this are refused, bytes.
    static let maximumSize = 64 * 1024

    /// Why a secret file was refused.
    enum Failure: Error, Equatable {
        case unreadable(RegularFile.Failure)
        /// Readable by others or writable by group or others; the mode's
        /// permission bits.
        case exposed(mode: mode_t)
        /// Readable by its group, for a secret only its owner may read.
        case groupReadable(mode: mode_t)
        case empty

        /// A sentence about the file at `path` saying what to do.
        func message(path: String) -> String {
            switch self {
            case .unreadable(let failure):
                "\(path) \(failure)"
            case .exposed(let mode):
                "\(path) is \(exposure(mode)) (mode \(octal(mode))); run \"chmod \(octal(mode & ~0o027)) \(path)\""
            case .groupReadable(let mode):
                "\(path) is readable by its group (mode \(octal(mode))), and group txrecon holds the producers; run "
                    + "\"chmod \(octal(mode & ~0o077)) \(path)\" (its owner, txrecon, reads it)"
            case .empty:
                "\(path) is empty; write the secret into it"
            }
        }

        private func exposure(_ mode: mode_t) -> String {
            if mode & 0o022 != 0 { return "writable by other users" }
            if mode & 0o004 != 0 { return "readable by every user" }
            return "open to every user"
        }

        private func octal(_ mode: mode_t) -> String {
            let digits = String(mode & 0o7777, radix: 8)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
    }

    /// Why a bearer token of `bytes` cannot be used, or nil. txrecon keeps a
    /// token out of logs, reasons and answers by looking for it in every
    /// text, which it cannot do for one shorter than SecretRedactor's
    /// shortest (it would blank out ordinary words), so such a token is
    /// refused rather than left unredacted.
    static func tokenTooShort(_ bytes: [UInt8]) -> String? {
        guard bytes.count < SecretRedactor.minimumLength else { return nil }
        return "the token has \(bytes.count) characters, fewer than \(SecretRedactor.minimumLength): txrecon could not "
            + "keep one that short out of its logs; use a long random one (openssl rand -hex 32)"
    }

    /// The secret in the file at `path`, without one trailing newline
    /// (`\n` or `\r\n`). `groupMayRead`: false for a secret no member of
    /// the file's group may read (Apple's In-App Purchase key: group txrecon
    /// holds the producers).
    static func read(_ path: String, groupMayRead: Bool = true) throws(Failure) -> [UInt8] {
        let contents: RegularFile.Contents
        do {
            contents = try RegularFile.read(path, limit: maximumSize)
        } catch {
            throw .unreadable(error)
        }
        let permissions = contents.mode & 0o7777
        guard permissions & 0o027 == 0 else { throw .exposed(mode: permissions) }
        guard groupMayRead || permissions & 0o040 == 0 else { throw .groupReadable(mode: permissions) }

        var secret = contents.bytes
        if secret.last == UInt8(ascii: "\n") {
            secret.removeLast()
            if secret.last == UInt8(ascii: "\r") { secret.removeLast() }
        }
        guard !secret.isEmpty else { throw .empty }
        return secret
    }
}
