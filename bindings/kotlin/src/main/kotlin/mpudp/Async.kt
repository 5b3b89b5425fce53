// Coroutines over the library's readiness (issue 55): no call parks a thread. Each operation
// is made with timeout 0; on MPU_ERR_WOULD_BLOCK the coroutine suspends until the library's
// ready callback says the connection (or the server, or the connect) may go on, then tries
// again. The callback only resumes continuations, on their own dispatcher: it never calls the
// library. Every suspending call is cancellable (the continuation leaves the waiters; a
// connect in progress is cancelled in the library). Needs kotlinx-coroutines (Debian:
// libkotlinx-coroutines-java; Android: org.jetbrains.kotlinx:kotlinx-coroutines-android).
package mpudp

import com.sun.jna.Memory
import com.sun.jna.Pointer
import com.sun.jna.ptr.LongByReference
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlin.coroutines.resume

/** The coroutines waiting on one connection, server or connect, resumed by the library's callback. */
internal class Ready : MpuLib.ReadyCallback {
    private val lock = Any()
    private var waiting = ArrayList<CancellableContinuation<Unit>>()
    /** A signal that came while nobody waited: the next wait returns at once. */
    private var pending = false

    override fun invoke(ctx: Pointer?) {
        val woken = synchronized(lock) {
            val w = waiting
            waiting = ArrayList()
            if (w.isEmpty()) pending = true
            w
        }
        for (c in woken) c.resume(Unit)
    }

    suspend fun await() = suspendCancellableCoroutine<Unit> { c ->
        val now = synchronized(lock) {
            if (pending) {
                pending = false
                true
            } else {
                waiting.add(c)
                false
            }
        }
        if (now) c.resume(Unit) else c.invokeOnCancellation { synchronized(lock) { waiting.remove(c) } }
    }
}

/** A connection whose calls suspend instead of blocking; close it to free the connection. */
class AsyncConnection internal constructor(val connection: Connection) : java.io.Closeable {
    private val ready = Ready()
    private var readBuf = Memory(16_384)
    private var writeBuf = Memory(16_384)
    private val handle get() = connection.handle

    init {
        check(lib.mpu_conn_set_ready_callback(handle, ready, null))
    }

    private fun room(m: Memory, len: Int): Memory = if (m.size() >= len) m else Memory(len.toLong())

    /** Up to [len] bytes into [buf] at [off]; -1 at the end of the stream. */
    suspend fun read(buf: ByteArray, off: Int = 0, len: Int = buf.size - off): Int {
        readBuf = room(readBuf, maxOf(len, 1))
        while (true) {
            val n = lib.mpu_read(handle, readBuf, SizeT(len.toLong()), 0).toInt()
            when {
                n > 0 -> {
                    readBuf.read(0, buf, off, n)
                    return n
                }
                n == 0 -> return -1
                n == MpUdpException.WOULD_BLOCK -> ready.await()
                else -> check(n)
            }
        }
    }

    suspend fun readFully(buf: ByteArray) {
        var got = 0
        while (got < buf.size) {
            val n = read(buf, got, buf.size - got)
            if (n < 0) throw MpUdpException(MpUdpException.CLOSED, "end of stream after $got of ${buf.size} bytes")
            got += n
        }
    }

    /** Writes all of [buf] (from [off], [len] bytes), suspending while the send buffer is full. */
    suspend fun write(buf: ByteArray, off: Int = 0, len: Int = buf.size - off) {
        writeBuf = room(writeBuf, maxOf(len, 1))
        writeBuf.write(0, buf, off, len)
        var done = 0
        while (done < len) {
            val n = lib.mpu_write(handle, writeBuf.share(done.toLong()), SizeT((len - done).toLong()), 0).toInt()
            when {
                n > 0 -> done += n
                n == MpUdpException.WOULD_BLOCK -> ready.await()
                else -> check(n)
            }
        }
    }

    /** The next event, or null once every event was read (the connection closed). */
    suspend fun nextEvent(): Event? {
        val e = MpuEvent()
        while (true) {
            when (val code = lib.mpu_next_event(handle, 0, e)) {
                0 -> return Event.of(e)
                MpUdpException.WOULD_BLOCK -> ready.await()
                MpUdpException.CLOSED -> return null
                else -> check(code)
            }
        }
    }

    fun shutdown() = connection.shutdown()

    override fun close() {
        lib.mpu_conn_set_ready_callback(handle, null, null)
        connection.close()
    }
}

/** The next connection a server accepts, suspending until one comes. */
suspend fun Endpoint.acceptAsync(): AsyncConnection {
    val r = synchronized(this) {
        (ready as Ready?) ?: Ready().also {
            check(lib.mpu_endpoint_set_ready_callback(handle, it, null))
            ready = it
        }
    }
    while (true) {
        val out = LongByReference()
        when (val code = lib.mpu_accept(handle, 0, out)) {
            0 -> return AsyncConnection(Connection(out.value))
            MpUdpException.WOULD_BLOCK -> r.await()
            else -> check(code)
        }
    }
}

/** Connects to [addr], suspending during the handshake; cancelling it cancels the connect. */
suspend fun Endpoint.connectAsync(addr: String): AsyncConnection {
    val done = Ready()
    val out = LongByReference()
    check(lib.mpu_connect_start(handle, addr, done, null, out))
    val pending = out.value
    try {
        while (true) {
            val conn = LongByReference()
            when (val code = lib.mpu_connect_finish(pending, conn)) {
                0 -> return AsyncConnection(Connection(conn.value))
                MpUdpException.WOULD_BLOCK -> done.await()
                else -> check(code)
            }
        }
    } catch (e: Throwable) {
        // Cancelled (or failed: then the handle is gone already and this is refused).
        lib.mpu_connect_free(pending)
        throw e
    }
}
