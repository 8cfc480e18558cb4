import Foundation
import Postback
import Store
import Testing
import TestSupport
@testable import CountersignCLI

/// `schema upload --app` (issue 49, finding 9): an example schema stored for one's own app.
@Suite struct SchemaUploadCLITests {
    @Test func anExampleIsUploadedForAnotherApp() async throws {
        let database = Checkout.temporaryDirectory() + "/upload.sqlite"
        let example = Checkout.root.appendingPathComponent("examples/schemas/game.json").path
        let uploaded = try await countersign(["schema", "upload", example, "--app", "525463029", "--database", database])
        #expect(uploaded.status == 0 && uploaded.stdout.contains("525463029"), "\(uploaded.stdout)")
        let store = try TestStore.open(StoreSettings(location: try DatabaseLocation(database)))
        defer { store.close() }
        #expect(try await store.schemas.hasCurrentSchema(app: 525463029))
        #expect(try await !store.schemas.hasCurrentSchema(app: 1108187390), "the app the file names is not given one")
        let notJSON = Checkout.temporaryDirectory() + "/not.json"
        try Data("not json".utf8).write(to: URL(fileURLWithPath: notJSON))
        let refused = try await countersign(["schema", "upload", notJSON, "--app", "525463029", "--database", database])
        #expect(refused.status == 1 && refused.stderr.contains("not a JSON object"))
    }
}
