// DeliveryRoute: one destination as intake sees it: its name, its engine,
// and the spool as that engine sees it (its inbox and item directories).
// Which drops a route takes is `Intake.Settings.matches`, which a reload
// may change; the routes themselves are fixed from start to stop.

struct DeliveryRoute: Sendable {
    let name: String
    let engine: DeliveryEngine
    let spool: Spool
}
