// Swift binding of mpudp's C ABI (crates/mpudp-ffi/include/mpudp.h). The blocking calls take
// a timeout; the `async` ones run them on a queue of their own, so a Swift `Task` never blocks
// a cooperative thread. Handles are freed when their object goes.
import CMpUdp
import Foundation

public struct MpUdpError: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public var description: String { "\(message) (code \(code))" }

    public static let timeout: Int32 = -2
    public static let wouldBlock: Int32 = -3
    public static let closed: Int32 = -4
}

@discardableResult
func check(_ code: Int32) throws -> Int32 {
    if code >= 0 { return code }
    var buf = [CChar](repeating: 0, count: 512)
    _ = mpu_last_error(&buf, buf.count)
    throw MpUdpError(code: code, message: String(cString: buf))
}

func handle(_ f: (UnsafeMutablePointer<UInt64>) -> Int32) throws -> UInt64 {
    var out: UInt64 = 0
    try check(f(&out))
    return out
}

func cString(_ f: (UnsafeMutablePointer<CChar>, Int) -> Int32) throws -> String {
    var buf = [CChar](repeating: 0, count: 256)
    try check(buf.withUnsafeMutableBufferPointer { f($0.baseAddress!, $0.count) })
    return String(cString: buf)
}

/// Blocking calls run here in the `async` variants.

public enum Iface: UInt32 { case other = 0, wifi = 1, cellular = 2, wired = 3 }

/// What an endpoint is built from (the endpoint keeps a copy).
public final class Options {
    let handle: UInt64

    init(preset: UInt32) throws { handle = try MpUdp.handle { mpu_options_new(preset, $0) } }
    public static func phone() throws -> Options { try Options(preset: UInt32(MPU_PRESET_PHONE)) }
    public static func server() throws -> Options { try Options(preset: UInt32(MPU_PRESET_SERVER)) }
    public static func standard() throws -> Options { try Options(preset: UInt32(MPU_PRESET_DEFAULT)) }
    deinit { mpu_options_free(handle) }

    @discardableResult public func device(_ name: String, kind: Iface, backup: Bool = false) throws -> Options {
        try check(mpu_options_add_device(handle, name, kind.rawValue, backup ? 1 : 0)); return self
    }
    @discardableResult public func address(_ addr: String, label: String, kind: Iface, backup: Bool = false) throws -> Options {
        try check(mpu_options_add_address(handle, addr, label, kind.rawValue, backup ? 1 : 0)); return self
    }
    /// A UDP socket bound to one network with `IP_BOUND_IF` (its interface index from
    /// `NWPathMonitor`'s `NWInterface`): the library owns `fd` from this call on.
    @discardableResult public func socket(_ fd: Int32, label: String, kind: Iface, backup: Bool = false) throws -> Options {
        try check(mpu_options_add_fd(handle, fd, label, kind.rawValue, backup ? 1 : 0)); return self
    }
    /// Where UDP gets no answer for `ms` milliseconds (1000 by default), use TCP on that
    /// network (0: UDP only).
    @discardableResult public func tcpFallback(ms: UInt32) throws -> Options {
        try check(mpu_options_tcp_fallback(handle, ms)); return self
    }
    @discardableResult public func serverKey(_ base64: String) throws -> Options {
        try check(mpu_options_server_key(handle, base64)); return self
    }
    /// Every connection's qlog event log in a file of its own in `dir` (an app's caches directory).
    @discardableResult public func qlogDir(_ dir: String) throws -> Options {
        try check(mpu_options_qlog_dir(handle, dir)); return self
    }
    @discardableResult public func identityPem(_ pem: String) throws -> Options {
        try check(mpu_options_identity_pem(handle, pem)); return self
    }
    public func publicKey() throws -> String { try cString { mpu_options_public_key(handle, $0, $1) } }
    /// Resume connections with resumption tickets, starting from `saved` (what
    /// `Endpoint.tickets()` returned in an earlier run; nil: none yet). Keep them in the
    /// Keychain: they hold the tickets' secrets.
    @discardableResult public func tickets(_ saved: Data? = nil) throws -> Options {
        let d = saved ?? Data()
        try check(d.withUnsafeBytes { mpu_options_tickets(handle, $0.bindMemory(to: UInt8.self).baseAddress, d.count) })
        return self
    }
    /// Server: give clients tickets, and with `earlyData` take their 0-RTT requests.
    @discardableResult public func issueTickets(earlyData: Bool) throws -> Options {
        try check(mpu_options_issue_tickets(handle, earlyData ? 1 : 0)); return self
    }
    /// The packet scheduler by name (lowest-rtt, last-received, priority, round-robin, redundant, ecf, blest).
    @discardableResult public func scheduler(_ name: String) throws -> Options {
        try check(mpu_options_scheduler(handle, name)); return self
    }
    /// A server identity derived from a 32-byte seed (tests and demos; keep real keys in a PEM).
    @discardableResult public func identitySeed(_ seed: Data) throws -> Options {
        guard seed.count == 32 else { throw MpUdpError(code: -1, message: "a seed is 32 bytes") }
        try check(seed.withUnsafeBytes { mpu_options_identity_seed(handle, $0.bindMemory(to: UInt8.self).baseAddress) })
        return self
    }
    /// How long `connect` waits for the handshake by default.
    @discardableResult public func connectTimeout(ms: UInt32) throws -> Options {
        try check(mpu_options_connect_timeout(handle, ms)); return self
    }
    /// Congestion control by name: lia (default), olia, reno, cubic, ledbat (background).
    @discardableResult public func congestion(_ name: String) throws -> Options {
        try check(mpu_options_congestion(handle, name)); return self
    }
    /// fullmesh, backup, on-demand or multimob (the phone preset's).
    @discardableResult public func pathManager(_ name: String) throws -> Options {
        try check(mpu_options_path_manager(handle, name)); return self
    }
    /// The multimob oracle's period (ms), bad-loss threshold (per mille), slow-RTO threshold (ms); 0 keeps one.
    @discardableResult public func oracle(periodMs: UInt32 = 0, lossPermille: UInt32 = 0, rtoMs: UInt32 = 0) throws -> Options {
        try check(mpu_options_oracle(handle, periodMs, lossPermille, rtoMs)); return self
    }
    /// Wake cellular early while WiFi is suspected: every `everyMs`, until `holdMs` after (0, 0: never).
    @discardableResult public func prewarm(everyMs: UInt32, holdMs: UInt32) throws -> Options {
        try check(mpu_options_prewarm(handle, everyMs, holdMs)); return self
    }
    @discardableResult public func fastJoin(_ on: Bool) throws -> Options {
        try check(mpu_options_fast_join(handle, on ? 1 : 0)); return self
    }
    /// The priority scheduler's preference, most preferred first.
    @discardableResult public func interfaceOrder(_ kinds: [Iface]) throws -> Options {
        let k = kinds.map { $0.rawValue }
        try k.withUnsafeBufferPointer { try check(mpu_options_interface_order(handle, $0.baseAddress, k.count)) }
        return self
    }
    @discardableResult public func idleTimeout(ms: UInt32) throws -> Options {
        try check(mpu_options_idle_timeout(handle, ms)); return self
    }
    @discardableResult public func peerTimeout(ms: UInt32) throws -> Options {
        try check(mpu_options_peer_timeout(handle, ms)); return self
    }
    @discardableResult public func keepAlive(ms: UInt32) throws -> Options {
        try check(mpu_options_keep_alive(handle, ms)); return self
    }
    @discardableResult public func recvWindow(initial: UInt32, max: UInt32) throws -> Options {
        try check(mpu_options_recv_window(handle, initial, max)); return self
    }
    /// Per-connection send buffer and per-socket kernel buffers, in bytes; 0 keeps one.
    @discardableResult public func buffers(send: UInt32 = 0, socket: UInt32 = 0) throws -> Options {
        try check(mpu_options_buffers(handle, send, socket)); return self
    }
    @discardableResult public func otherPathsAfter(ms: UInt32) throws -> Options {
        try check(mpu_options_other_paths_after(handle, ms)); return self
    }
    @discardableResult public func monitorInterval(ms: UInt32) throws -> Options {
        try check(mpu_options_monitor_interval(handle, ms)); return self
    }
    @discardableResult public func ipv6(_ on: Bool) throws -> Options {
        try check(mpu_options_ipv6(handle, on ? 1 : 0)); return self
    }
    /// Run the endpoint in this app's calls, not on the library's threads: a round trip crosses
    /// no thread, but nothing moves between calls (call `Endpoint.drive`; no readiness, so no
    /// async calls). For a network thread of the app's own that waits in blocking calls.
    @discardableResult public func driveInCalls(_ on: Bool) throws -> Options {
        try check(mpu_options_drive_in_calls(handle, on ? 1 : 0)); return self
    }
    /// Server: an address announced to every client (an IPv6 one for IPv6-only cellular).
    @discardableResult public func announce(_ addr: String) throws -> Options {
        try check(mpu_options_announce(handle, addr)); return self
    }
    /// Tests and closed networks only: anyone on the path can sit in the middle.
    @discardableResult public func insecureUnauthenticatedServer() throws -> Options {
        try check(mpu_options_insecure_unauthenticated_server(handle)); return self
    }
    /// Binds each TCP socket of a handed-in path to the app's network (`IP_BOUND_IF`) before it
    /// connects: `callback(ctx, label, fd)` returns 0, or anything else to refuse the carrier.
    /// Without it the library copies the handed-in socket's `IP_BOUND_IF`.
    @discardableResult public func tcpSocketCallback(
        _ callback: MpuTcpSocketCallback, context: UnsafeMutableRawPointer?
    ) throws -> Options {
        try check(mpu_options_tcp_socket_callback(handle, callback, context)); return self
    }
}

public struct Event {
    public let kind: UInt32
    public let path: Int32
    public let subflow: Int64
    public let value: UInt32
    public let atMicroseconds: UInt64
    init(_ e: MpuEvent) { kind = e.kind; path = e.path; subflow = e.subflow; value = e.value; atMicroseconds = e.at_us }
}

public final class Endpoint {
    let handle: UInt64
    init(_ h: UInt64) { handle = h }
    deinit { mpu_endpoint_free(handle) }

    public static func client(_ o: Options) throws -> Endpoint { Endpoint(try MpUdp.handle { mpu_client_new(o.handle, $0) }) }
    public static func server(_ o: Options, address: String) throws -> Endpoint {
        Endpoint(try MpUdp.handle { mpu_server_new(o.handle, address, $0) })
    }
    public func localAddress() throws -> String { try cString { mpu_endpoint_local_addr(handle, $0, $1) } }

    public func connect(_ addr: String, timeoutMs: Int32 = -1) throws -> Connection {
        Connection(try MpUdp.handle { mpu_connect(handle, addr, timeoutMs, $0) })
    }
    /// Connects, suspending during the handshake (no thread parked); cancelling the task
    /// cancels the connect.
    public func connect(_ addr: String) async throws -> Connection {
        let done = Ready()
        var pending: UInt64 = 0
        try check(mpu_connect_start(handle, addr, Ready.callback, done.context, &pending))
        defer { withExtendedLifetime(done) {} }
        while true {
            var conn: UInt64 = 0
            let code = mpu_connect_finish(pending, &conn)
            if code == 0 { return Connection(conn) }
            if code != MpUdpError.wouldBlock { try check(code) }
            do { try await done.wait() } catch { mpu_connect_free(pending); throw error }
        }
    }
    /// `connect` with `data` as the stream's first bytes: with a ticket for the server they go
    /// with the first packet (0-RTT). Only a request that is safe to act on twice.
    public func connectEarly(_ addr: String, data: Data, timeoutMs: Int32 = -1) throws -> Connection {
        Connection(try MpUdp.handle { out in
            data.withUnsafeBytes { mpu_connect_early(handle, addr, $0.bindMemory(to: UInt8.self).baseAddress, data.count, timeoutMs, out) }
        })
    }
    /// The tickets to save for the next start (`Options.tickets`).
    public func tickets() throws -> Data {
        var n: UInt64 = 0
        _ = mpu_endpoint_tickets(handle, nil, 0, &n)
        var buf = Data(count: Int(n))
        let count = buf.count
        try check(buf.withUnsafeMutableBytes { mpu_endpoint_tickets(handle, $0.bindMemory(to: UInt8.self).baseAddress, count, &n) })
        return buf
    }
    public func accept(timeoutMs: Int32 = -1) throws -> Connection {
        Connection(try MpUdp.handle { mpu_accept(handle, timeoutMs, $0) })
    }
    /// The next connection (a server), suspending until one comes (no thread parked).
    public func accept() async throws -> Connection {
        if !watching {
            try check(mpu_endpoint_set_ready_callback(handle, Ready.callback, ready.context))
            watching = true
        }
        while true {
            var conn: UInt64 = 0
            let code = mpu_accept(handle, 0, &conn)
            if code == 0 { return Connection(conn) }
            if code != MpUdpError.wouldBlock { try check(code) }
            try await ready.wait()
        }
    }
    let ready = Ready()
    private var watching = false

    /// From `NWPathMonitor`'s `pathUpdateHandler`: an interface that appeared or went.
    public func setPath(_ name: String, up: Bool) throws { try check(mpu_path_set_up(handle, name, up ? 1 : 0)) }
    /// `NWPath.isConstrained`/`isExpensive` or the app's own judgement of the link.
    public func pathHint(_ name: String, degraded: Bool, signalLevel: Int32 = -1, linkRateBps: UInt64 = 0) throws {
        try check(mpu_path_hint(handle, name, degraded ? 1 : 0, signalLevel, linkRateBps))
    }
    public func addPath(socket fd: Int32, label: String, kind: Iface, backup: Bool = false) throws {
        try check(mpu_path_add_fd(handle, fd, label, kind.rawValue, backup ? 1 : 0))
    }
    public func removePath(_ name: String) throws { try check(mpu_path_remove(handle, name)) }
    public func pathsChanged() throws { try check(mpu_paths_changed(handle)) }
    /// Runs an endpoint driven in calls (`Options.driveInCalls`) for `timeoutMs` (0: what is due).
    public func drive(timeoutMs: Int32 = 0) throws { try check(mpu_endpoint_drive(handle, timeoutMs)) }
}

public final class Connection {
    let handle: UInt64
    init(_ h: UInt64) { handle = h }
    deinit {
        mpu_conn_set_ready_callback(handle, nil, nil)
        mpu_conn_free(handle)
    }

    /// Up to `max` bytes; empty at the end of the stream.
    public func read(max: Int = 65536, timeoutMs: Int32 = -1) throws -> Data {
        var buf = Data(count: max)
        let n = buf.withUnsafeMutableBytes { mpu_read(handle, $0.bindMemory(to: UInt8.self).baseAddress, max, timeoutMs) }
        if n < 0 { try check(Int32(n)) }
        return buf.prefix(Int(n))
    }
    /// Up to `max` bytes, suspending (no thread parked) until some come; empty at the end.
    public func read(max: Int = 65536) async throws -> Data {
        try watch()
        while true {
            do { return try read(max: max, timeoutMs: 0) } catch let e as MpUdpError where e.code == MpUdpError.wouldBlock {}
            try await ready.wait()
        }
    }
    /// Writes all of `data`; the count written (fewer only if the time ran out).
    @discardableResult public func write(_ data: Data, timeoutMs: Int32 = -1) throws -> Int {
        let n = data.withUnsafeBytes { mpu_write(handle, $0.bindMemory(to: UInt8.self).baseAddress, data.count, timeoutMs) }
        if n < 0 { try check(Int32(n)) }
        return Int(n)
    }
    /// Writes all of `data`, suspending (no thread parked) while the send buffer is full.
    public func write(_ data: Data) async throws {
        try watch()
        var done = 0
        while done < data.count {
            let rest = data.suffix(from: data.startIndex + done)
            let n = rest.withUnsafeBytes { mpu_write(handle, $0.bindMemory(to: UInt8.self).baseAddress, rest.count, 0) }
            if n > 0 { done += Int(n) } else if Int32(n) == MpUdpError.wouldBlock { try await ready.wait() } else { try check(Int32(n)) }
        }
    }
    /// The readiness the async calls wait on (issue 55), given to the library at the first.
    let ready = Ready()
    private var watching = false
    private func watch() throws {
        if watching { return }
        try check(mpu_conn_set_ready_callback(handle, Ready.callback, ready.context))
        watching = true
    }
    /// Whether it was resumed with a ticket, and how many of the stream's first bytes went as
    /// 0-RTT data.
    public func resumption() throws -> (resumed: Bool, earlyBytes: UInt64) {
        var r: UInt32 = 0
        var e: UInt64 = 0
        try check(mpu_conn_resumption(handle, &r, &e))
        return (r != 0, e)
    }
    public func shutdown() throws { try check(mpu_shutdown(handle)) }
    public func abort() throws { try check(mpu_abort(handle)) }
    public func nextEvent(timeoutMs: Int32 = -1) throws -> Event? {
        var e = MpuEvent()
        let code = mpu_next_event(handle, timeoutMs, &e)
        if code == MpUdpError.timeout || code == MpUdpError.wouldBlock { return nil }
        try check(code)
        return Event(e)
    }
}

/// The tasks waiting on one connection or connect, resumed by the library's ready callback
/// (which only resumes them: it never calls the library). A signal while nobody waits makes
/// the next wait return at once; a cancelled task wakes and throws `CancellationError`.
final class Ready: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var pending = false

    func signal() {
        lock.lock()
        let woken = waiting
        waiting = []
        if woken.isEmpty { pending = true }
        lock.unlock()
        woken.forEach { $0.resume() }
    }

    func wait() async throws {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                lock.lock()
                if pending {
                    pending = false
                    lock.unlock()
                    c.resume()
                } else {
                    waiting.append(c)
                    lock.unlock()
                }
            }
        } onCancel: { self.signal() }
        try Task.checkCancellation()
    }

    /// This object, unretained, as the callback's context (its owner outlives the callback).
    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
    static let callback: MpuReadyCallback = { ctx in
        guard let ctx else { return }
        Unmanaged<Ready>.fromOpaque(ctx).takeUnretainedValue().signal()
    }
}
