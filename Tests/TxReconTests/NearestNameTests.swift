// NearestName: which command a mistyped word is taken to mean.
import Testing
@testable import TxRecon

@Suite struct NearestNameTests {
    private let commands = ["check-config", "help", "list", "release", "requeue-rejected", "retry", "run", "show",
                            "status", "submit", "sweep"]

    @Test func swappingTwoNeighboursIsOneEdit() {
        #expect(NearestName.distance("stauts", "status") == 1)
        #expect(NearestName.distance("status", "status") == 0)
        #expect(NearestName.distance("", "run") == 3)
        #expect(NearestName.distance("kitten", "sitting") == 3)
    }

    @Test func aSlipIsTakenForTheCommandItIsNearest() {
        let slips = ["stauts": "status", "lsit": "list", "shwo": "show", "rn": "run", "retyr": "retry",
                     "sweeps": "sweep", "Status": "status", "check-cofig": "check-config", "hepl": "help"]
        for (typed, meant) in slips {
            #expect(NearestName.suggestion(for: typed, among: commands) == meant, "\(typed)")
        }
    }

    @Test func aWordNearNoCommandGetsNoSuggestion() {
        for typed in ["x", "frobnicate", "requeue", "deliver", "--verbose", ""] {
            #expect(NearestName.suggestion(for: typed, among: commands) == nil, "\(typed)")
        }
    }

    @Test func aTieGoesToTheNameFirstInAlphabeticalOrder() {
        #expect(NearestName.suggestion(for: "rum", among: ["run", "rue"]) == "rue")
    }
}
