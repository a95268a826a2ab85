// RejectedSearch: finds the file in rejected/ that holds a given signed
// payload, for `txrecon probe` to say why the daemon set its notification
// aside. Only files changed since `since` are read, so a large rejected/
// costs a stat per file, not a read. Reports nothing.

struct RejectedSearch {
    let layout: SpoolLayout
    let signedPayload: String
    /// UNIX milliseconds; older files are not read.
    let since: Int64

    /// The rejected file holding the payload and its reason, or nil.
    func find() -> (name: String, reason: String)? {
        guard let names = try? SystemCall.listDirectory(layout.rejected) else { return nil }
        let needle = Array(signedPayload.utf8)
        for name in names where !name.hasPrefix(".") && !name.hasSuffix(".reason") {
            let path = layout.rejected + "/" + name
            guard let info = try? SystemCall.linkStatus(path),
                  Int64(info.st_ctim.tv_sec) * 1000 >= since - 1000,
                  let bytes = try? SystemCall.readFile(path, limit: 16 << 20),
                  bytes.firstRange(of: needle) != nil
            else { continue }
            let reason = (try? SystemCall.readFile(path + ".reason", limit: 1 << 20))
                .map { String(decoding: $0, as: UTF8.self) } ?? "(no reason file)"
            return (name, reason)
        }
        return nil
    }
}
