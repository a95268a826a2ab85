// RejectedRequeue: `txrecon requeue-rejected`, executed by intake, which
// owns rejected/ (it rejects what it cannot take): each named file (or all)
// moved from rejected/ back into new/, where intake reads it again. Only
// valid names and regular files move; a directory or FIFO set aside from
// new/ stays. The engine only learns how many left rejected/, for its count.
// Reports one entry per file requeued.

enum RejectedRequeue {
    /// Executes `request` (a requeue-rejected) on `spool`.
    static func perform(_ request: ControlRequest, spool: Spool, events: ItemEvents) -> ControlResult {
        var result = ControlResult()
        for target in request.targets where !ControlRequest.isValid(target, for: .requeueRejected) {
            result.skipped.append((target, ControlRequest.invalidTargetReason))
        }
        let names: [String]
        if request.all {
            // rejected/ that cannot be listed is no "nothing to requeue".
            // A name there that no request could name (a .reason left
            // without its file) is not the operator's to hear about.
            do {
                names = try spool.rejectedNames().filter { ControlRequest.isValid($0, for: .requeueRejected) }
            } catch {
                result.skipped.append(("rejected/", "cannot be listed (\(error)); nothing was requeued: "
                                       + "give it back to the txrecon user and ask again"))
                return result
            }
        } else {
            names = request.targets.filter { ControlRequest.isValid($0, for: .requeueRejected) }
        }
        for name in names {
            do {
                switch try spool.requeueRejected(name) {
                case .requeued:
                    events.requeued(file: name)
                    result.applied.append(name)
                case .missing:
                    result.skipped.append((name, "no such file in rejected/"))
                case .notRegularFile:
                    result.skipped.append((name, "not a regular file (a directory or FIFO set aside from new/); "
                                           + "look at it and remove it by hand"))
                }
            } catch {
                result.skipped.append((name, "\(error)"))
            }
        }
        return result
    }
}
