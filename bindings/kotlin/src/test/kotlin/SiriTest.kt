// The Kotlin binding on the JVM (as on Android, over JNA): a Siri-like exchange over two
// loopback paths, WiFi reported lost after the third request, every byte checked, the event
// callback seeing the cellular subflow. Run by crates/mpudp-ffi/tests/kotlin.rs.
import mpudp.Connection
import mpudp.Endpoint
import mpudp.Event
import mpudp.Iface
import mpudp.MpUdpException
import mpudp.MpuLib
import mpudp.Options
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import kotlin.concurrent.thread

fun byteAt(r: Int, i: Int) = (r * 31 + i * 7).toByte()

fun serve(conn: Connection) = conn.use {
    val req = ByteArray(2004)
    while (true) {
        try {
            it.readFully(req, 10_000)
        } catch (e: MpUdpException) {
            break
        }
        val r = req[0].toInt()
        it.write(ByteArray(20_000) { i -> byteAt(r, i) }, timeoutMs = 10_000)
    }
    it.shutdown()
    it.waitClosed(5_000)
}

/**
 * Resumption as an app uses it: the first run saves its tickets, the next (a new endpoint, as
 * after a restart) starts from them and sends its request with the first packet (0-RTT); the
 * server answers whether the connection was resumed and how many bytes came early.
 */
fun resumeAcrossRestarts(seed: ByteArray) {
    val (server, key) = Options.server().identitySeed(seed).issueTickets(true).use {
        Endpoint.server(it, "127.0.0.1:0") to it.publicKey()
    }
    val request = "GET /now!".toByteArray()
    val serving = thread {
        repeat(2) {
            server.accept(10_000).use { c ->
                c.readFully(ByteArray(request.size), 10_000)
                val (resumed, early) = c.resumption()
                c.write(byteArrayOf(if (resumed) 1 else 0, early.toByte()), timeoutMs = 5_000)
                c.shutdown()
                c.waitClosed(5_000)
            }
        }
    }
    fun run(saved: ByteArray?): Pair<ByteArray, ByteArray> =
        Options.default().serverKey(key).tickets(saved).address("127.0.0.1:0", "wifi", Iface.WIFI)
            .use { Endpoint.client(it) }
            .use { ep ->
                val answer = ByteArray(2)
                ep.connectEarly(server.localAddr, request, 5_000).use { c ->
                    c.readFully(answer, 10_000)
                    // The ticket is an event of its own kind (it was kind 0, undocumented).
                    var kinds = emptyList<Int>()
                    for (i in 0 until 100) {
                        kinds = kinds + generateSequence { c.nextEvent(0) }.map { it.kind }.toList()
                        if (Event.TICKET in kinds) break
                        Thread.sleep(20)
                    }
                    check(Event.TICKET in kinds && 0 !in kinds) { "events $kinds" }
                    c.shutdown()
                    c.waitClosed(5_000)
                }
                // The ticket comes with the connection's first packets; an empty store is 3 bytes.
                var tickets = ep.tickets()
                var tries = 0
                while (tickets.size <= 3 && tries++ < 100) {
                    Thread.sleep(20)
                    tickets = ep.tickets()
                }
                answer to tickets
            }
    val (first, saved) = run(null)
    check(first[0] == 0.toByte() && first[1] == 0.toByte()) { "first run: a fresh connection, ${first.toList()}" }
    check(saved.size > 3) { "no ticket to save" }
    val (second, _) = run(saved)
    check(second[0] == 1.toByte() && second[1] == request.size.toByte()) {
        "after the restart: resumed with the request early, ${second.toList()}"
    }
    serving.join()
    server.close()
    println("resumed after a restart, the request in the first packet")
}

fun main() {
    val seed = ByteArray(32) { 7 }
    val (server, key) = Options.server().identitySeed(seed).use { Endpoint.server(it, "127.0.0.1:0") to it.publicKey() }
    val serving = thread { serve(server.accept(10_000)) }
    val qlogs = java.nio.file.Files.createTempDirectory("mpudp-kotlin-qlog").toFile()
    // The phone preset, tuned as an app would (each call reaches the library, issue 55).
    val client = Options.phone().serverKey(key).qlogDir(qlogs.path)
        .congestion("lia").pathManager("multimob").keepAlive(15_000).peerTimeout(10_000).idleTimeout(120_000)
        .prewarm(10_000, 20_000).interfaceOrder(Iface.WIFI, Iface.CELLULAR).connectTimeout(5_000)
        .onTcpSocket { _, _ -> true }
        .address("127.0.0.1:0", "wifi", Iface.WIFI)
        .address("127.0.0.2:0", "cell", Iface.CELLULAR, backup = true)
        .use { Endpoint.client(it) }
    val conn = client.connect(server.localAddr, 5_000)
    val events = java.util.Collections.synchronizedList(ArrayList<Event>())
    val closed = CountDownLatch(1)
    conn.onEvent { e ->
        events.add(e)
        if (e.kind == Event.CLOSED) closed.countDown()
    }
    val resp = ByteArray(20_000)
    for (r in 1..6) {
        if (r == 4) {
            check(conn.subflows().filter { it.path == 1 }.sumBy { it.dataBytesSent.toInt() } == 0) { "cellular unused before" }
            client.setPathUp("wifi", false)
        }
        val t0 = System.nanoTime()
        conn.write(ByteArray(2004).also { it[0] = r.toByte() }, timeoutMs = 5_000)
        conn.readFully(resp, 10_000)
        val ms = (System.nanoTime() - t0) / 1e6
        for (i in resp.indices) check(resp[i] == byteAt(r, i)) { "response $r byte $i" }
        println("request $r: ${"%.2f".format(ms)} ms${if (r >= 4) " (WiFi down)" else ""}")
    }
    check(conn.bytesRead() == 6L * 20_000) { "bytes read ${conn.bytesRead()}" }
    check(conn.stats().established) { "${conn.stats()}" }
    // Nothing to read now: 0, not an exception.
    check(conn.read(ByteArray(8), timeoutMs = 0) == 0) { "a read with nothing ready" }
    check(conn.subflows().any { it.path == 1 && it.dataBytesSent > 0 }) { "data on cellular: ${conn.subflows()}" }
    try {
        client.setPathUp("nosuch", true)
        error("an unknown interface was accepted")
    } catch (e: MpUdpException) {
        check(e.message!!.contains("nosuch")) { e.message!! }
        check(e.code == MpUdpException.NO_SUCH_INTERFACE) { "code ${e.code}" }
    }
    conn.shutdown()
    check(conn.read(ByteArray(8), timeoutMs = 5_000) == -1) { "end of stream" }
    check(conn.waitClosed(5_000) == 0) { "graceful close" }
    check(closed.await(5, TimeUnit.SECONDS)) { "the callback saw the close" }
    check(events.any { it.kind == Event.SUBFLOW_ESTABLISHED && it.path == 1 }) { "a cellular subflow in $events" }
    serving.join()
    conn.close()
    client.close()
    server.close()
    resumeAcrossRestarts(seed)
    check(MpuLib.lib.mpu_live_handles() == 0L) { "handles left: ${MpuLib.lib.mpu_live_handles()}" }
    val logs = qlogs.listFiles()!!.filter { it.name.startsWith("client-") && it.name.endsWith(".sqlog") }
    check(logs.size == 1 && logs[0].readText().contains("\"transport:packet_sent\"")) { "the qlog: $logs" }
    qlogs.deleteRecursively()
    println("ok")
}
