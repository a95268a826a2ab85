// Arguments and Command: the little argument parser the subcommands share.
import Glibc
import TxRecon

/// One subcommand: its flags, its help, and what it does.
protocol Command: SendableMetatype {
    /// Flags without a value (`--json`, `--all`); `--help` is always allowed.
    static var flags: [String] { get }
    /// Options taking a value besides `--config`.
    static var options: [String] { get }
    static var summary: String { get }
    static var help: String { get }
    static func run(_ arguments: Arguments) async -> Int32
}

extension Command {
    static var flags: [String] { [] }
    static var options: [String] { [] }
}

struct ArgumentError: Error, CustomStringConvertible {
    var description: String
}

struct Arguments {
    var positional: [String] = []
    private var present: Set<String> = []
    private var values: [String: String] = [:]

    init(_ words: [String], flags: [String], options: [String]) throws {
        var rest = words[...]
        while let word = rest.popFirst() {
            if word == "--" {
                positional.append(contentsOf: rest)
                break
            }
            if word.hasPrefix("--"), word.count > 2 {
                let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
                if options.contains(parts[0]) {
                    if parts.count == 2 {
                        values[parts[0]] = parts[1]
                    } else if let value = rest.popFirst() {
                        values[parts[0]] = value
                    } else {
                        throw ArgumentError(description: "\(parts[0]) needs a value")
                    }
                } else if flags.contains(word) || word == "--help" {
                    present.insert(word)
                } else {
                    throw ArgumentError(description: "unknown option '\(word)'")
                }
            } else {
                positional.append(word)
            }
        }
    }

    func has(_ flag: String) -> Bool { present.contains(flag) }
    func value(_ option: String) -> String? { values[option] }

    var configurationPath: String { value("--config") ?? Configuration.defaultPath }
}

enum Usage {
    static func fail(_ message: String) -> Never {
        printError("txrecon: \(message)")
        exit(2)
    }

    static func overview(commands: [String: any Command.Type]) -> String {
        var text = """
            txrecon \(TxReconVersion.current): deliver App Store transactions from a spool to a backend, at least once.

            Usage: txrecon COMMAND [--config PATH] [ARGUMENTS]

            Commands:

            """
        for name in commands.keys.sorted() {
            text += "  " + name.padding(toLength: 18) + commands[name]!.summary + "\n"
        }
        text += "\n--config PATH defaults to \(Configuration.defaultPath). 'txrecon COMMAND --help' for details."
        return text
    }
}

/// Loads the configuration for a subcommand; nil after printing the problem
/// (the caller then exits with ConfigurationError.exitStatus).
func loadConfiguration(_ arguments: Arguments) -> Configuration? {
    do {
        return try ConfigurationLoader.load(path: arguments.configurationPath)
    } catch {
        printError("txrecon: configuration error: \(error)")
        return nil
    }
}

/// The destinations a command looks at, each with the spool as its daemon
/// engine sees it: `[Backend]` alone without destinations/, else every
/// destination, or only `--destination NAME`. Exits with a usage error
/// naming the destinations when NAME is not one.
func destinationLayouts(_ configuration: Configuration, only: String?,
                        command: String) -> [(name: String, layout: SpoolLayout)] {
    let root = SpoolLayout(root: configuration.spool.directory)
    let names = [Destination.primaryName] + configuration.destinations.map(\.name)
    let all = configuration.destinations.isEmpty
        ? [(Destination.primaryName, root)] : names.map { ($0, root.destination($0)) }
    guard let only else { return all }
    guard let chosen = all.first(where: { $0.0 == only }) else {
        Usage.fail("\(command): no destination '\(only)'; the destinations are \(names.joined(separator: ", "))")
    }
    return [chosen]
}

/// The destinations whose items `status`, `list` and `show` look at: every
/// one configured (`[Backend]` first), then every one left behind under
/// destinations/ (`configured` false: its file was removed, its items wait),
/// or only `--destination NAME`, which may name either. Exits with a usage
/// error naming them when NAME is none.
func itemPlaces(_ configuration: Configuration, only: String?, command: String) -> [DestinationDirectories.Place] {
    let places = DestinationDirectories.places(SpoolLayout(root: configuration.spool.directory),
                                              configured: configuration.destinations.map(\.name))
    guard let only else { return places }
    guard let chosen = places.first(where: { $0.name == only }) else {
        let configured = places.filter(\.configured).map(\.name).joined(separator: ", ")
        let leftovers = places.filter { !$0.configured }.map(\.name)
        Usage.fail("\(command): no destination '\(only)'; the destinations are \(configured)"
                   + (leftovers.isEmpty ? "" : " (and, not configured, \(leftovers.joined(separator: ", ")))"))
    }
    return [chosen]
}

/// A destination as `list` and `show` name it: `analytics`, or
/// `review (not configured)` for one left behind.
func placeName(_ place: DestinationDirectories.Place) -> String {
    place.configured ? place.name : place.name + " (not configured)"
}

extension String {
    func padding(toLength length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }
}
