import ArgumentParser
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "simulate")
    func run() async throws {}
}
