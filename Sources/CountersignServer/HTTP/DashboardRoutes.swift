import Foundation
import Hummingbird

/// `GET /dashboard`: the dashboard's pages, compiled into the binary, and the Chart.js file it draws with. The pages
/// hold no data: they read the `/v1` API with the API key the person enters.
enum DashboardRoutes {
    /// The dashboard's files by name, with their content types.
    static let files: [String: (bytes: [UInt8], contentType: String)] = [
        "index.html": (PackageResources.index_html, "text/html; charset=utf-8"),
        "dashboard.css": (PackageResources.dashboard_css, "text/css; charset=utf-8"),
        "core.js": (PackageResources.core_js, javaScript),
        "dashboard.js": (PackageResources.dashboard_js, javaScript),
        "page-overview.js": (PackageResources.page_overview_js, javaScript),
        "page-campaigns.js": (PackageResources.page_campaigns_js, javaScript),
        "page-events.js": (PackageResources.page_events_js, javaScript),
        "page-performance.js": (PackageResources.page_performance_js, javaScript),
        "page-values.js": (PackageResources.page_values_js, javaScript),
        "logic.js": (PackageResources.logic_js, javaScript),
        "page-apple-ads.js": (PackageResources.page_apple_ads_js, javaScript),
        "page-health.js": (PackageResources.page_health_js, javaScript),
        "page-lookup.js": (PackageResources.page_lookup_js, javaScript),
    ]
    static let javaScript = "text/javascript; charset=utf-8"

    /// Only this server's own files run; nothing may frame the pages.
    static let securityHeaders: HTTPFields = [
        .init("Content-Security-Policy")!: "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'",
        .init("X-Content-Type-Options")!: "nosniff",
        .init("Referrer-Policy")!: "no-referrer",
        .cacheControl: "no-cache",
    ]

    static func add(to router: Router<AppRequestContext>, chartLibrary: String) {
        router.get("/dashboard") { _, _ in file("index.html") }
        router.get("/dashboard/chart.js") { _, _ in
            guard let bytes = FileManager.default.contents(atPath: chartLibrary) else {
                throw APIError(.notFound, .chartLibraryMissing,
                               "Chart.js is not at \(chartLibrary); install Debian's libjs-chart.js (make run does) or set --chart-library")
            }
            var headers = securityHeaders
            headers[.contentType] = javaScript
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        router.get("/dashboard/:file") { _, context in
            let name = context.parameters.get("file") ?? ""
            guard files[name] != nil else { throw APIError(.notFound, .notFound, "the dashboard has no file \(name)") }
            return file(name)
        }
    }

    private static func file(_ name: String) -> Response {
        let (bytes, contentType) = files[name]!
        var headers = securityHeaders
        headers[.contentType] = contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
