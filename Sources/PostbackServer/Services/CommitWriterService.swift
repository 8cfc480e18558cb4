import ServiceLifecycle
import Store

/// Stops the commit thread at shutdown. The application's service group shuts services down in reverse order, so this
/// runs after the HTTP server has drained its in-flight requests (and so their commits).
struct CommitWriterService: Service {
    let writer: GroupCommitWriter

    func run() async throws {
        try? await gracefulShutdown()
        writer.stop()
    }
}
