import Foundation
import Histogram
import NIOCore
import NIOHTTP1
import NIOPosix

/// An open-loop load at a fixed rate: request `i` is due at `start + i / rate` whatever the answers before it, and its
/// latency is measured from when it was due, not from when it could be sent. A server that stalls makes every request
/// due during the stall late, as real senders see it (coordinated omission corrected); latencies go into an
/// HdrHistogram in microseconds.
///
/// The load must cost far less than what it measures, or it takes the cores the server needs (both run on the same
/// machine): a client with a task and an HTTP client request per postback cost about 170 µs of CPU a request, more than
/// the server. So this one runs on one event loop, sends bodies read before the run, keeps HTTP/1.1
/// connections open, and reads only the answers' status.
struct FixedRateLoad {
    /// What a run measured.
    struct Outcome {
        /// Latency from the intended send time, in microseconds.
        var latency = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        var sent = 0
        var ok = 0
        var other = 0
        /// Of `other`, the answers 500 and above.
        var serverErrors = 0
        var failed = 0
        /// The slowest latency of the requests due in each wall-clock second of the run.
        var slowestBySecond = SlowestBySecond(start: 0)
        /// Seconds from the first request due to the last answer.
        var seconds = 0.0
        /// How busy the machine's cores were from the first request due to the last answer, 0 to 1 (nil where it
        /// cannot be read): a share of the maximum rate is not that share of the CPU.
        var cpuBusy: Double?
    }

    /// The server's base URL (`http://host:port`); bodies go to `/postbacks`.
    let url: String
    /// The bodies, sent in order.
    let bodies: [[UInt8]]
    /// Requests a second.
    let rate: Double
    /// How long to send.
    let seconds: Double
    /// Connections opened to the server; a request due while all are busy waits for the first free one.
    let connections: Int

    /// Sends `rate * seconds` requests on schedule and returns once every one is answered (or its connection failed).
    func run() throws -> Outcome {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw LoadError.badURL(url)
        }
        let requests = bodies.prefix(Int(rate * seconds)).map { ByteBuffer(bytes: $0) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/postbacks")
        head.headers.add(name: "Host", value: "\(host):\(port)")
        head.headers.add(name: "Content-Type", value: "application/json")
        let schedule = Schedule(requests: requests, head: head, rate: rate, loop: loop)
        let bootstrap = ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.pipeline.addHTTPClientHandlers().flatMap { channel.pipeline.addHandler(Connection(schedule: schedule)) }
            }
        let channels = try (0..<connections).map { _ in try bootstrap.connect(host: host, port: port).wait() }
        let cpuBefore = MachineCPU.now()
        let started = DispatchTime.now().uptimeNanoseconds
        try loop.submit { schedule.start() }.wait()
        try schedule.done.futureResult.wait()
        let ended = DispatchTime.now().uptimeNanoseconds
        let cpuAfter = MachineCPU.now()
        for channel in channels { try? channel.close().wait() }
        var outcome = try loop.submit { schedule.outcome }.wait()
        outcome.seconds = Double(ended - started) / 1e9
        if let cpuBefore { outcome.cpuBusy = cpuAfter?.busyShare(since: cpuBefore) }
        return outcome
    }

    enum LoadError: Error, CustomStringConvertible {
        case badURL(String)
        var description: String {
            switch self {
            case .badURL(let url): "the URL must be http://HOST:PORT, not \(url)"
            }
        }
    }

    /// The requests, when each is due, which connections are free, and what came back; used only on its event loop.
    private final class Schedule: @unchecked Sendable {
        let requests: [ByteBuffer]
        let head: HTTPRequestHead
        let rate: Double
        let loop: any EventLoop
        let done: EventLoopPromise<Void>
        var outcome = Outcome()
        private var started: UInt64 = 0
        /// `started` on the wall clock, in seconds since 1970.
        private var startedWall = 0.0
        /// The next request not yet due-and-queued, and the due requests waiting for a free connection.
        private var next = 0
        private var waiting: [Int] = []
        private var waitingHead = 0
        private var idle: [Connection] = []
        private var answered = 0
        private var ticker: RepeatedTask?
        /// Connections still open.
        var open = 0

        init(requests: [ByteBuffer], head: HTTPRequestHead, rate: Double, loop: any EventLoop) {
            self.requests = requests
            self.head = head
            self.rate = rate
            self.loop = loop
            done = loop.makePromise()
            if requests.isEmpty { done.succeed() }
        }

        func start() {
            started = DispatchTime.now().uptimeNanoseconds
            startedWall = Date().timeIntervalSince1970
            outcome.slowestBySecond = SlowestBySecond(start: startedWall)
            // Every 200 µs, everything due by now is sent or queued.
            ticker = loop.scheduleRepeatedTask(initialDelay: .zero, delay: .microseconds(200)) { [self] _ in release() }
        }

        /// When request `index` was due.
        func intended(_ index: Int) -> UInt64 { started + UInt64(Double(index) / rate * 1e9) }

        private func release() {
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let due = min(requests.count, Int(elapsed * rate) + 1)
            while next < due {
                waiting.append(next)
                next += 1
            }
            if next == requests.count { ticker?.cancel() }
            dispatch()
        }

        private func dispatch() {
            while waitingHead < waiting.count, let connection = idle.popLast() {
                let index = waiting[waitingHead]
                waitingHead += 1
                outcome.sent += 1
                connection.send(index, requests[index])
            }
            if waitingHead == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                waitingHead = 0
            }
        }

        /// A connection closed. Once none is open, every request not yet answered fails, so a run always ends.
        func closed() {
            open -= 1
            guard open == 0, answered < requests.count else { return }
            ticker?.cancel()
            for index in (waiting[waitingHead...] + Array(next..<requests.count)) {
                outcome.sent += 1
                answered(index, status: nil)
            }
            next = requests.count
            waiting.removeAll()
            waitingHead = 0
        }

        /// A connection is open and free.
        func ready(_ connection: Connection) {
            idle.append(connection)
            dispatch()
        }

        /// Request `index` got status `status` (nil: its connection failed).
        func answered(_ index: Int, status: UInt?) {
            // A request failed before it was due (every connection closed) counts as answered when due.
            let (now, due) = (DispatchTime.now().uptimeNanoseconds, intended(index))
            let micros = now > due ? (now - due) / 1_000 : 0
            _ = outcome.latency.record(micros)
            let dueOnWallClock = startedWall + Double(index) / rate
            outcome.slowestBySecond.record(micros, from: dueOnWallClock, through: dueOnWallClock)
            switch status {
            case 200?: outcome.ok += 1
            case nil: outcome.failed += 1
            default:
                outcome.other += 1
                if let status, status >= 500 { outcome.serverErrors += 1 }
            }
            answered += 1
            if answered == requests.count { done.succeed() }
        }
    }

    /// One keep-alive connection: one request in flight at a time.
    private final class Connection: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundOut = HTTPClientRequestPart

        let schedule: Schedule
        private var context: ChannelHandlerContext?
        private var inFlight: Int?
        private var status: UInt = 0

        init(schedule: Schedule) {
            self.schedule = schedule
        }

        func channelActive(context: ChannelHandlerContext) {
            self.context = context
            schedule.open += 1
            schedule.ready(self)
        }

        func send(_ index: Int, _ body: ByteBuffer) {
            inFlight = index
            guard let context else { return }
            var head = schedule.head
            head.headers.add(name: "Content-Length", value: String(body.readableBytes))
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): status = head.status.code
            case .body: break
            case .end:
                guard let index = inFlight else { return }
                inFlight = nil
                schedule.answered(index, status: status)
                schedule.ready(self)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            if let index = inFlight { schedule.answered(index, status: nil) }
            inFlight = nil
            self.context = nil
            schedule.closed()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
