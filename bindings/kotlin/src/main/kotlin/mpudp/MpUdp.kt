// Kotlin binding of mpudp's C ABI (crates/mpudp-ffi/include/mpudp.h), over JNA: no C glue to
// build per ABI, and JNA ships for Android (the `jna` AAR) as for the JVM. Blocking calls take
// a timeout; call them from a thread of your own (a coroutine on Dispatchers.IO). Every handle
// is Closeable: use `use { }`.
package mpudp

import com.sun.jna.Callback
import com.sun.jna.IntegerType
import com.sun.jna.Library
import com.sun.jna.Memory
import com.sun.jna.Native
import com.sun.jna.Pointer
import com.sun.jna.Structure
import com.sun.jna.ptr.IntByReference
import com.sun.jna.ptr.LongByReference

/** `size_t`: 64 bits on arm64 and x86_64, 32 on armv7. */
class SizeT(value: Long = 0) : IntegerType(Native.SIZE_T_SIZE, value, true) {
    override fun toByte() = toInt().toByte()
    override fun toChar() = toInt().toChar()
    override fun toShort() = toInt().toShort()
}

/** `intptr_t` (the byte counts of read and write; negative: an error code). */
class SSizeT(value: Long = 0) : IntegerType(Native.SIZE_T_SIZE, value, false) {
    override fun toByte() = toInt().toByte()
    override fun toChar() = toInt().toChar()
    override fun toShort() = toInt().toShort()
}

@Structure.FieldOrder("kind", "path", "subflow", "value", "atUs")
open class MpuEvent : Structure() {
    @JvmField var kind: Int = 0
    @JvmField var path: Int = 0
    @JvmField var subflow: Long = 0
    @JvmField var value: Int = 0
    @JvmField var atUs: Long = 0

    class ByReference : MpuEvent(), Structure.ByReference
}

@Structure.FieldOrder("established", "subflowsOpen", "bytesWritten", "bytesRead", "bytesReinjected", "srttUs")
class MpuStats : Structure() {
    @JvmField var established: Int = 0
    @JvmField var subflowsOpen: Int = 0
    @JvmField var bytesWritten: Long = 0
    @JvmField var bytesRead: Long = 0
    @JvmField var bytesReinjected: Long = 0
    @JvmField var srttUs: Long = 0
}

@Structure.FieldOrder("id", "path", "open", "backup", "srttUs", "dataBytesSent", "bytesReceived", "tcp", "reserved")
class MpuSubflowStats : Structure() {
    @JvmField var id: Int = 0
    @JvmField var path: Int = 0
    @JvmField var open: Int = 0
    @JvmField var backup: Int = 0
    @JvmField var srttUs: Long = 0
    @JvmField var dataBytesSent: Long = 0
    @JvmField var bytesReceived: Long = 0
    @JvmField var tcp: Int = 0
    @JvmField var reserved: Int = 0
}

/**
 * A flag as the C ABI takes it: an `int32_t` of 0 or 1. Never pass a Kotlin `Boolean` to C:
 * JNA sends `true` as -1, which the library refuses (`MPU_ERR_INVALID`); a C `bool` holding it
 * was undefined behaviour (ABI 1).
 */
internal fun Boolean.flag(): Int = if (this) 1 else 0

/** The C functions, one for one (flags as `Int`, see [flag]). */
@Suppress("FunctionName")
interface MpuLib : Library {
    interface EventCallback : Callback {
        fun invoke(ctx: Pointer?, event: MpuEvent.ByReference)
    }

    interface ReadyCallback : Callback {
        fun invoke(ctx: Pointer?)
    }

    interface TcpSocketCallback : Callback {
        fun invoke(ctx: Pointer?, label: String, fd: Int): Int
    }

    fun mpu_abi_version(): Int
    fun mpu_last_error(buf: ByteArray?, len: SizeT): SizeT
    fun mpu_live_handles(): Long
    fun mpu_options_new(preset: Int, out: LongByReference): Int
    fun mpu_options_free(options: Long): Int
    fun mpu_options_add_device(options: Long, device: String, kind: Int, backup: Int): Int
    fun mpu_options_add_address(options: Long, addr: String, label: String?, kind: Int, backup: Int): Int
    fun mpu_options_add_fd(options: Long, fd: Int, label: String, kind: Int, backup: Int): Int
    fun mpu_options_server_key(options: Long, key: String): Int
    fun mpu_options_qlog_dir(options: Long, dir: String): Int
    fun mpu_options_identity_pem(options: Long, pem: String): Int
    fun mpu_options_identity_seed(options: Long, seed: ByteArray): Int
    fun mpu_options_public_key(options: Long, buf: ByteArray, len: SizeT): Int
    fun mpu_options_scheduler(options: Long, name: String): Int
    fun mpu_options_tcp_fallback(options: Long, ms: Int): Int
    fun mpu_options_tickets(options: Long, saved: ByteArray?, len: SizeT): Int
    fun mpu_options_issue_tickets(options: Long, earlyData: Int): Int
    fun mpu_options_tcp_socket_callback(options: Long, callback: TcpSocketCallback?, ctx: Pointer?): Int
    fun mpu_options_congestion(options: Long, name: String): Int
    fun mpu_conn_readiness_fd(conn: Long, fd: IntByReference): Int
    fun mpu_conn_set_ready_callback(conn: Long, callback: ReadyCallback?, ctx: Pointer?): Int
    fun mpu_endpoint_readiness_fd(endpoint: Long, fd: IntByReference): Int
    fun mpu_endpoint_set_ready_callback(endpoint: Long, callback: ReadyCallback?, ctx: Pointer?): Int
    fun mpu_connect_start(endpoint: Long, addr: String, callback: ReadyCallback?, ctx: Pointer?, out: LongByReference): Int
    fun mpu_connect_finish(pending: Long, out: LongByReference): Int
    fun mpu_connect_free(pending: Long): Int
    fun mpu_options_path_manager(options: Long, name: String): Int
    fun mpu_options_oracle(options: Long, periodMs: Int, lossPermille: Int, rtoMs: Int): Int
    fun mpu_options_prewarm(options: Long, everyMs: Int, holdMs: Int): Int
    fun mpu_options_fast_join(options: Long, on: Int): Int
    fun mpu_options_interface_order(options: Long, kinds: IntArray, n: SizeT): Int
    fun mpu_options_idle_timeout(options: Long, ms: Int): Int
    fun mpu_options_peer_timeout(options: Long, ms: Int): Int
    fun mpu_options_keep_alive(options: Long, ms: Int): Int
    fun mpu_options_recv_window(options: Long, initial: Int, max: Int): Int
    fun mpu_options_buffers(options: Long, sendBuffer: Int, socketBuffer: Int): Int
    fun mpu_options_other_paths_after(options: Long, ms: Int): Int
    fun mpu_options_monitor_interval(options: Long, ms: Int): Int
    fun mpu_options_ipv6(options: Long, on: Int): Int
    fun mpu_options_drive_in_calls(options: Long, on: Int): Int
    fun mpu_options_announce(options: Long, addr: String): Int
    fun mpu_options_insecure_unauthenticated_server(options: Long): Int
    fun mpu_options_connect_timeout(options: Long, ms: Int): Int
    fun mpu_client_new(options: Long, out: LongByReference): Int
    fun mpu_server_new(options: Long, addr: String, out: LongByReference): Int
    fun mpu_endpoint_free(endpoint: Long): Int
    fun mpu_endpoint_local_addr(endpoint: Long, buf: ByteArray, len: SizeT): Int
    fun mpu_endpoint_wakeups(endpoint: Long, out: LongByReference): Int
    fun mpu_endpoint_drive(endpoint: Long, timeoutMs: Int): Int
    fun mpu_connect(endpoint: Long, addr: String, timeoutMs: Int, out: LongByReference): Int
    fun mpu_connect_early(endpoint: Long, addr: String, data: ByteArray?, len: SizeT, timeoutMs: Int, out: LongByReference): Int
    fun mpu_endpoint_tickets(endpoint: Long, buf: ByteArray?, len: SizeT, written: LongByReference): Int
    fun mpu_accept(endpoint: Long, timeoutMs: Int, out: LongByReference): Int
    fun mpu_path_set_up(endpoint: Long, name: String, up: Int): Int
    fun mpu_path_hint(endpoint: Long, name: String, degraded: Int, signalLevel: Int, linkRateBps: Long): Int
    fun mpu_path_add_address(endpoint: Long, addr: String, label: String, kind: Int, backup: Int): Int
    fun mpu_path_add_fd(endpoint: Long, fd: Int, label: String, kind: Int, backup: Int): Int
    fun mpu_path_remove(endpoint: Long, name: String): Int
    fun mpu_paths_changed(endpoint: Long): Int
    fun mpu_read(conn: Long, buf: Pointer, len: SizeT, timeoutMs: Int): SSizeT
    fun mpu_write(conn: Long, buf: Pointer, len: SizeT, timeoutMs: Int): SSizeT
    fun mpu_shutdown(conn: Long): Int
    fun mpu_abort(conn: Long): Int
    fun mpu_conn_free(conn: Long): Int
    fun mpu_wait_closed(conn: Long, timeoutMs: Int, reason: IntByReference?): Int
    fun mpu_next_event(conn: Long, timeoutMs: Int, out: MpuEvent): Int
    fun mpu_set_event_callback(conn: Long, callback: EventCallback, ctx: Pointer?): Int
    fun mpu_conn_stats(conn: Long, out: MpuStats): Int
    fun mpu_conn_resumption(conn: Long, resumed: IntByReference, earlyBytes: LongByReference): Int
    fun mpu_subflow_stats(conn: Long, index: Int, out: MpuSubflowStats): Int

    companion object {
        val lib: MpuLib by lazy {
            val l = Native.load("mpudp_ffi", MpuLib::class.java)
            check(l.mpu_abi_version() == ABI_VERSION) { "libmpudp_ffi ABI ${l.mpu_abi_version()}, binding $ABI_VERSION" }
            l
        }
        const val ABI_VERSION = 2
    }
}

/** A negative code of the C ABI (`MPU_ERR_*`) and its message. */
class MpUdpException(val code: Int, message: String) : Exception("$message (code $code)") {
    companion object {
        const val INVALID = -1
        const val TIMEOUT = -2
        const val WOULD_BLOCK = -3
        const val CLOSED = -4
        const val UNREACHABLE = -5
        const val NOT_AUTHENTICATED = -6
        const val CONFIG = -7
        const val IO = -8
        const val PERMISSION = -9
        const val NO_SUCH_INTERFACE = -10
        /** A bug in the library (a panic caught at the boundary): please report it. */
        const val PANIC = -99
    }
}

internal val lib get() = MpuLib.lib

internal fun check(code: Int): Int {
    if (code >= 0) return code
    val buf = ByteArray(512)
    lib.mpu_last_error(buf, SizeT(buf.size.toLong()))
    throw MpUdpException(code, String(buf, 0, buf.indexOf(0).let { if (it < 0) buf.size else it }))
}

private fun handle(f: (LongByReference) -> Int): Long {
    val out = LongByReference()
    check(f(out))
    return out.value
}

private fun cString(f: (ByteArray, SizeT) -> Int): String {
    val buf = ByteArray(256)
    check(f(buf, SizeT(buf.size.toLong())))
    return String(buf, 0, buf.indexOf(0))
}

enum class Iface(val code: Int) { OTHER(0), WIFI(1), CELLULAR(2), WIRED(3) }

/** What an endpoint is built from; an endpoint keeps a copy, so close it once the endpoint is made. */
class Options private constructor(internal val handle: Long) : java.io.Closeable {
    companion object {
        fun default() = Options(handle { lib.mpu_options_new(0, it) })
        /** A phone's client: MultiMob (cellular only when WiFi degrades), FAST_JOIN, pre-warming. */
        fun phone() = Options(handle { lib.mpu_options_new(1, it) })
        fun server() = Options(handle { lib.mpu_options_new(2, it) })
    }

    fun device(name: String, kind: Iface, backup: Boolean = false) =
        apply { check(lib.mpu_options_add_device(handle, name, kind.code, backup.flag())) }

    fun address(addr: String, label: String, kind: Iface, backup: Boolean = false) =
        apply { check(lib.mpu_options_add_address(handle, addr, label, kind.code, backup.flag())) }

    /** A socket bound to a network by Android (`Network.bindSocket`, then `detachFd`): the library owns it. */
    fun socket(fd: Int, label: String, kind: Iface, backup: Boolean = false) =
        apply { check(lib.mpu_options_add_fd(handle, fd, label, kind.code, backup.flag())) }

    fun serverKey(base64: String) = apply { check(lib.mpu_options_server_key(handle, base64)) }
    /** Every connection's qlog event log in a file of its own in [dir] (an app's cache directory). */
    fun qlogDir(dir: String) = apply { check(lib.mpu_options_qlog_dir(handle, dir)) }
    fun identityPem(pem: String) = apply { check(lib.mpu_options_identity_pem(handle, pem)) }
    fun identitySeed(seed: ByteArray) = apply {
        require(seed.size == 32) { "a seed is 32 bytes" }
        check(lib.mpu_options_identity_seed(handle, seed))
    }
    fun scheduler(name: String) = apply { check(lib.mpu_options_scheduler(handle, name)) }
    /** Where UDP gets no answer for [ms] milliseconds (1000 by default), use TCP on that network (0: UDP only). */
    fun tcpFallback(ms: Int) = apply { check(lib.mpu_options_tcp_fallback(handle, ms)) }
    /**
     * Resume connections with resumption tickets, starting from [saved] (what
     * [Endpoint.tickets] returned in an earlier run; null: none yet). Store them as the app's
     * other credentials: they hold the tickets' secrets.
     */
    fun tickets(saved: ByteArray? = null) =
        apply { check(lib.mpu_options_tickets(handle, saved, SizeT((saved?.size ?: 0).toLong()))) }
    /** Server: give clients tickets, and with [earlyData] take their 0-RTT requests. */
    fun issueTickets(earlyData: Boolean) = apply { check(lib.mpu_options_issue_tickets(handle, earlyData.flag())) }
    fun publicKey(): String = cString { b, n -> lib.mpu_options_public_key(handle, b, n) }

    /**
     * Binds each TCP socket of a handed-in path ([socket]) to the app's network before it
     * connects, so that the TCP carrier leaves through the same network as the UDP socket:
     * on Android, `network.bindSocket(ParcelFileDescriptor.fromFd(fd).fileDescriptor)` for
     * the network [label] names. [bind] returns false to refuse the carrier. Called on the
     * library's driver thread; kept as long as these options and their endpoints live.
     */
    fun onTcpSocket(bind: (label: String, fd: Int) -> Boolean) = apply {
        val cb = object : MpuLib.TcpSocketCallback {
            override fun invoke(ctx: Pointer?, label: String, fd: Int) = if (bind(label, fd)) 0 else 1
        }
        tcpSocketCallback = cb
        check(lib.mpu_options_tcp_socket_callback(handle, cb, null))
    }

    /** Congestion control by name: lia (default), olia, reno, cubic, ledbat (background). */
    fun congestion(name: String) = apply { check(lib.mpu_options_congestion(handle, name)) }
    /** fullmesh, backup, on-demand or multimob (the phone preset's). */
    fun pathManager(name: String) = apply { check(lib.mpu_options_path_manager(handle, name)) }
    /** The multimob oracle's period (ms), bad-loss threshold (per mille) and slow-RTO threshold (ms); 0 keeps one. */
    fun oracle(periodMs: Int = 0, lossPermille: Int = 0, rtoMs: Int = 0) =
        apply { check(lib.mpu_options_oracle(handle, periodMs, lossPermille, rtoMs)) }
    /** Wake cellular early while WiFi is suspected: every [everyMs], until [holdMs] after (0, 0: never). */
    fun prewarm(everyMs: Int, holdMs: Int) = apply { check(lib.mpu_options_prewarm(handle, everyMs, holdMs)) }
    fun fastJoin(on: Boolean) = apply { check(lib.mpu_options_fast_join(handle, on.flag())) }
    /** The priority scheduler's preference, most preferred first. */
    fun interfaceOrder(vararg kinds: Iface) = apply {
        val k = kinds.map { it.code }.toIntArray()
        check(lib.mpu_options_interface_order(handle, k, SizeT(k.size.toLong())))
    }
    fun idleTimeout(ms: Int) = apply { check(lib.mpu_options_idle_timeout(handle, ms)) }
    fun peerTimeout(ms: Int) = apply { check(lib.mpu_options_peer_timeout(handle, ms)) }
    fun keepAlive(ms: Int) = apply { check(lib.mpu_options_keep_alive(handle, ms)) }
    fun recvWindow(initial: Int, max: Int) = apply { check(lib.mpu_options_recv_window(handle, initial, max)) }
    /** Per-connection send buffer and per-socket kernel buffers, in bytes; 0 keeps one. */
    fun buffers(sendBuffer: Int = 0, socketBuffer: Int = 0) =
        apply { check(lib.mpu_options_buffers(handle, sendBuffer, socketBuffer)) }
    fun otherPathsAfter(ms: Int) = apply { check(lib.mpu_options_other_paths_after(handle, ms)) }
    fun monitorInterval(ms: Int) = apply { check(lib.mpu_options_monitor_interval(handle, ms)) }
    fun ipv6(on: Boolean) = apply { check(lib.mpu_options_ipv6(handle, on.flag())) }
    /**
     * Run the endpoint in this app's calls, not on the library's threads: a round trip crosses
     * no thread, but nothing moves between calls (call [Endpoint.drive]; no readiness, so no
     * suspend functions). For a network thread of the app's own that waits in blocking calls.
     */
    fun driveInCalls(on: Boolean) = apply { check(lib.mpu_options_drive_in_calls(handle, on.flag())) }
    /** Server: an address announced to every client (an IPv6 one for IPv6-only cellular). */
    fun announce(addr: String) = apply { check(lib.mpu_options_announce(handle, addr)) }
    /** Tests and closed networks only: anyone on the path can sit in the middle. */
    fun insecureUnauthenticatedServer() = apply { check(lib.mpu_options_insecure_unauthenticated_server(handle)) }
    fun connectTimeout(ms: Int) = apply { check(lib.mpu_options_connect_timeout(handle, ms)) }

    /** The callback given to the library: held here so the JVM does not collect it. */
    private var tcpSocketCallback: MpuLib.TcpSocketCallback? = null

    override fun close() {
        lib.mpu_options_free(handle)
    }
}

/** An event of a connection (`MPU_EVENT_*` in `kind`). */
data class Event(val kind: Int, val path: Int, val subflow: Long, val value: Int, val atUs: Long) {
    companion object {
        const val CONNECTED = 1
        const val SUBFLOW_ESTABLISHED = 2
        const val SUBFLOW_FAILED = 3
        const val SUBFLOW_RECOVERED = 4
        const val SUBFLOW_CLOSED = 5
        const val SUBFLOW_MIGRATED = 6
        const val ADDRESS_ANNOUNCED = 7
        const val FINISHED = 8
        const val VERDICT = 9
        const val FAIL_BACK = 10
        const val CLOSED = 11
        /** A resumption ticket arrived: [Endpoint.tickets] has one more to save. */
        const val TICKET = 12

        internal fun of(e: MpuEvent) = Event(e.kind, e.path, e.subflow, e.value, e.atUs)
    }
}

data class SubflowStats(
    val id: Int, val path: Int, val open: Boolean, val backup: Boolean, val srttUs: Long, val dataBytesSent: Long,
    val tcp: Boolean = false, val bytesReceived: Long = 0
)

/** A connection's statistics. */
data class Stats(
    val established: Boolean, val subflowsOpen: Int, val bytesWritten: Long, val bytesRead: Long,
    val bytesReinjected: Long, val srttUs: Long
)

class Endpoint private constructor(internal val handle: Long) : java.io.Closeable {
    /** The readiness of its accepts, made by `acceptAsync` (Async.kt). */
    internal var ready: Any? = null

    companion object {
        fun client(o: Options) = Endpoint(handle { lib.mpu_client_new(o.handle, it) })
        fun server(o: Options, addr: String) = Endpoint(handle { lib.mpu_server_new(o.handle, addr, it) })
    }

    val localAddr: String get() = cString { b, n -> lib.mpu_endpoint_local_addr(handle, b, n) }
    val wakeups: Long get() = handle { lib.mpu_endpoint_wakeups(handle, it) }
    /** Runs an endpoint driven in calls ([Options.driveInCalls]) for [timeoutMs] (0: what is due). */
    fun drive(timeoutMs: Int = 0) = check(lib.mpu_endpoint_drive(handle, timeoutMs))

    fun connect(addr: String, timeoutMs: Int = -1) = Connection(handle { lib.mpu_connect(handle, addr, timeoutMs, it) })
    /**
     * [connect] with [data] as the stream's first bytes: with a ticket for the server they go
     * with the first packet (0-RTT), so the answer can come a round trip sooner. Only a
     * request that is safe to act on twice (early data can be replayed).
     */
    fun connectEarly(addr: String, data: ByteArray, timeoutMs: Int = -1) =
        Connection(handle { lib.mpu_connect_early(handle, addr, data, SizeT(data.size.toLong()), timeoutMs, it) })
    /** The tickets to save for the next start ([Options.tickets]). */
    fun tickets(): ByteArray {
        val n = LongByReference()
        lib.mpu_endpoint_tickets(handle, null, SizeT(0), n)
        val buf = ByteArray(n.value.toInt())
        check(lib.mpu_endpoint_tickets(handle, buf, SizeT(buf.size.toLong()), n))
        return buf
    }
    fun accept(timeoutMs: Int = -1) = Connection(handle { lib.mpu_accept(handle, timeoutMs, it) })

    /** From `ConnectivityManager.NetworkCallback.onAvailable` / `onLost`. */
    fun setPathUp(name: String, up: Boolean) { check(lib.mpu_path_set_up(handle, name, up.flag())) }
    /** From `onCapabilitiesChanged` and `WifiInfo`: signal 0-4 (-1 unknown), link rate bit/s (0 unknown). */
    fun pathHint(name: String, degraded: Boolean, signalLevel: Int = -1, linkRateBps: Long = 0) {
        check(lib.mpu_path_hint(handle, name, degraded.flag(), signalLevel, linkRateBps))
    }
    /** A network that appeared, as a socket the library binds to [addr] (named [label]). */
    fun addPath(addr: String, label: String, kind: Iface, backup: Boolean = false) {
        check(lib.mpu_path_add_address(handle, addr, label, kind.code, backup.flag()))
    }
    fun addPath(fd: Int, label: String, kind: Iface, backup: Boolean = false) {
        check(lib.mpu_path_add_fd(handle, fd, label, kind.code, backup.flag()))
    }
    fun removePath(name: String) { check(lib.mpu_path_remove(handle, name)) }
    fun pathsChanged() { check(lib.mpu_paths_changed(handle)) }

    override fun close() {
        lib.mpu_endpoint_free(handle)
    }
}

class Connection internal constructor(internal val handle: Long) : java.io.Closeable {
    companion object {
        // Callbacks the library may still call (until their CLOSED event), kept reachable:
        // JNA frees a callback's native stub when its object is collected.
        private val live: MutableSet<Any> = java.util.concurrent.ConcurrentHashMap.newKeySet()
    }

    /**
     * Up to `len` bytes into `buf` at `off`; -1 at the end of the stream; 0 when nothing came
     * within the time (with `timeoutMs` 0: nothing ready now). The native buffer is the
     * connection's, reused from read to read.
     */
    fun read(buf: ByteArray, off: Int = 0, len: Int = buf.size - off, timeoutMs: Int = -1): Int = synchronized(readLock) {
        if (readMem.size() < len) readMem = Memory(maxOf(len, 1).toLong())
        val n = lib.mpu_read(handle, readMem, SizeT(len.toLong()), timeoutMs).toInt()
        when {
            n == 0 -> -1
            n == MpUdpException.WOULD_BLOCK || n == MpUdpException.TIMEOUT -> 0
            else -> {
                check(n)
                readMem.read(0, buf, off, n)
                n
            }
        }
    }
    private val readLock = Any()
    private var readMem = Memory(16_384)

    fun readFully(buf: ByteArray, timeoutMs: Int = -1) {
        var got = 0
        while (got < buf.size) {
            val n = read(buf, got, buf.size - got, timeoutMs)
            if (n < 0) throw MpUdpException(MpUdpException.CLOSED, "end of stream after $got of ${buf.size} bytes")
            if (n == 0) throw MpUdpException(MpUdpException.TIMEOUT, "$got of ${buf.size} bytes within $timeoutMs ms")
            got += n
        }
    }

    /** Writes all of `buf` (returns the count written, fewer only if the time ran out). */
    fun write(buf: ByteArray, off: Int = 0, len: Int = buf.size - off, timeoutMs: Int = -1): Int {
        val mem = Memory(maxOf(len, 1).toLong())
        mem.write(0, buf, off, len)
        return check(lib.mpu_write(handle, mem, SizeT(len.toLong()), timeoutMs).toInt())
    }

    fun shutdown() { check(lib.mpu_shutdown(handle)) }
    fun abort() { check(lib.mpu_abort(handle)) }

    /** Waits for the close; its reason (`MPU_CLOSE_*`: 0 graceful, 6 reset: connect again). */
    fun waitClosed(timeoutMs: Int = -1): Int {
        val r = IntByReference()
        check(lib.mpu_wait_closed(handle, timeoutMs, r))
        return r.value
    }

    /** The next event, or null on timeout; throws CLOSED once every event was read. */
    fun nextEvent(timeoutMs: Int = -1): Event? {
        val e = MpuEvent()
        val code = lib.mpu_next_event(handle, timeoutMs, e)
        if (code == MpUdpException.TIMEOUT || code == MpUdpException.WOULD_BLOCK) return null
        check(code)
        return Event.of(e)
    }

    /** Calls `f` on the library's thread with each event; keep it short, never block in it. */
    fun onEvent(f: (Event) -> Unit) {
        val cb = object : MpuLib.EventCallback {
            override fun invoke(ctx: Pointer?, event: MpuEvent.ByReference) {
                val e = Event.of(event)
                try {
                    f(e)
                } finally {
                    if (e.kind == Event.CLOSED) live.remove(this)
                }
            }
        }
        live.add(cb)
        check(lib.mpu_set_event_callback(handle, cb, null))
    }

    fun subflows(): List<SubflowStats> {
        val out = ArrayList<SubflowStats>()
        val s = MpuSubflowStats()
        var i = 0
        while (lib.mpu_subflow_stats(handle, i, s) == 0) {
            out.add(SubflowStats(s.id, s.path, s.open != 0, s.backup != 0, s.srttUs, s.dataBytesSent, s.tcp != 0, s.bytesReceived))
            i++
        }
        return out
    }

    /** Whether it was resumed with a ticket, and how many of the stream's first bytes went as 0-RTT data. */
    fun resumption(): Pair<Boolean, Long> {
        val r = IntByReference()
        val e = LongByReference()
        check(lib.mpu_conn_resumption(handle, r, e))
        return (r.value != 0) to e.value
    }

    fun bytesRead(): Long = stats().bytesRead

    fun stats(): Stats {
        val s = MpuStats()
        check(lib.mpu_conn_stats(handle, s))
        return Stats(s.established != 0, s.subflowsOpen, s.bytesWritten, s.bytesRead, s.bytesReinjected, s.srttUs)
    }

    override fun close() {
        lib.mpu_conn_free(handle)
    }
}
