import ArgumentParser
struct ReverifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reverify")
    func run() async throws {}
}
