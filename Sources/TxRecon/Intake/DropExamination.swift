// DropExamination: what reading, decoding and verifying one drop in new/
// found, before intake acts on it.
//
// Examining changes nothing (it reads the file and checks its signatures), so
// several threads may examine drops at once (`ExaminerPool`); what follows
// from an examination (hand the item to the engine, reject, defer, split a
// page) is intake's, on its own thread, in the order the drops were listed.
// Reports nothing.

enum DropExamination: Sendable, Equatable {
    /// The name is no longer there (taken already, or a duplicate event).
    case gone
    /// Not a file intake reads (see `DropContent.refused`); left untouched.
    case refused(Rejection)
    /// Decoded and, unless Mode=none, verified (a receipt part read as the
    /// purchase it names); `novelties`: what Apple added that this release
    /// does not know (NotificationPayload); `file`: the file read, which a
    /// split sets aside.
    case decoded(VerifiedInput, modifiedAt: Int64, novelties: [AppleNovelty] = [], file: WrittenFile)
    /// Read whole, but it does not decode or its signatures do not verify.
    case undecodable(Rejection, modifiedAt: Int64)
    /// The spool could not read it (or the receipt a part names); it stays
    /// in new/.
    case failed(SpoolError)

    /// Reads `name` from new/ and decodes it, verifying with `verifier`;
    /// a part of a receipt upload is read through `receipts`.
    static func examine(_ name: String, in spool: Spool, maximumSize: Int, decoder: InputDecoder,
                        verifier: SignedDataVerifier?, receipts: ReceiptLibrary) -> DropExamination {
        let content: DropContent
        do throws(SpoolError) {
            content = try spool.readDrop(name, maximumSize: maximumSize)
        } catch {
            return .failed(error)
        }
        switch content {
        case .gone:
            return .gone
        case let .refused(rejection):
            return .refused(rejection)
        case let .bytes(bytes, modifiedAt, file):
            do throws(ItemReadFailure) {
                var novelties: [AppleNovelty] = []
                let decoded = try decoder.decode(bytes, verifyingWith: verifier, receipts: receipts,
                                                 novelties: &novelties)
                return .decoded(decoded, modifiedAt: modifiedAt, novelties: novelties, file: file)
            } catch {
                switch error {
                case let .rejected(rejection): return .undecodable(rejection, modifiedAt: modifiedAt)
                case let .unreadable(error): return .failed(error)
                }
            }
        case let .linked(bytes, modifiedAt, file, names):
            // Delivered already (its one other name is done/KEY): the engine
            // finds it equal to the delivered snapshot and moves this name
            // into done/ as superseded, or ignores it while its attempt ends.
            // Or fanned out to destinations' inboxes by a fan-out a crash
            // interrupted (Spool+FanOut): intake completes it.
            guard case let .item(item)? = try? decoder.decode(bytes, verifyingWith: verifier, receipts: receipts),
                  names == 1 + spool.fanOutCopies(of: name, file: file.file)
                    || (names == 2 && spool.isDelivered(item.key, sameFileAs: file.file))
            else { return .refused(Spool.hardLinked(names: names)) }
            return .decoded(.item(item), modifiedAt: modifiedAt, file: file)
        }
    }
}
