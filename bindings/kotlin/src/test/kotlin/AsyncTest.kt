// Coroutines over the library's readiness (issue 55): 200 connections (from 10 client
// endpoints), each making Siri-like requests, all served and made by coroutines on a dispatcher of 2 threads. No call parks a
// thread: the JVM's thread count does not grow with the connections. A read with nothing to
// come is cancelled by a timeout. Run by crates/mpudp-ffi/tests/kotlin.rs.
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.newFixedThreadPoolContext
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import mpudp.AsyncConnection
import mpudp.Endpoint
import mpudp.Iface
import mpudp.Options
import mpudp.acceptAsync
import mpudp.connectAsync

const val CONNECTIONS = 200
const val REQUESTS = 5

fun answerByte(c: Int, r: Int, i: Int) = (c * 7 + r * 31 + i).toByte()

suspend fun serve(conn: AsyncConnection) = conn.use {
    val req = ByteArray(4)
    while (it.read(req, 0, 1) > 0) {
        var got = 1
        while (got < 4) {
            val n = it.read(req, got, 4 - got)
            check(n > 0) { "a request cut short" }
            got += n
        }
        val c = (req[1].toInt() and 0xff) or ((req[2].toInt() and 0xff) shl 8)
        it.write(ByteArray(2_000) { i -> answerByte(c, req[3].toInt(), i) })
    }
    it.shutdown()
}

fun main() = runBlocking {
    val seed = ByteArray(32) { 5 }
    val (server, key) = Options.server().identitySeed(seed).use { Endpoint.server(it, "127.0.0.1:0") to it.publicKey() }
    // Ten client endpoints of 20 connections each, as apps on several phones: a server answers
    // at most 64 INITIALs a second from one source address and port (a burst of 32).
    val clients = List(10) {
        Options.default().serverKey(key).address("127.0.0.1:0", "lo", Iface.WIRED).use { o -> Endpoint.client(o) }
    }
    val app = newFixedThreadPoolContext(2, "app")
    val base = Thread.activeCount()
    var peak = base
    val sampler = launch(app) {
        while (true) {
            peak = maxOf(peak, Thread.activeCount())
            delay(5)
        }
    }
    val started = System.nanoTime()
    withTimeout(60_000) { withContext(app) {
        val serving = launch { repeat(CONNECTIONS) { val c = server.acceptAsync(); launch { serve(c) } } }
        val answered = (0 until CONNECTIONS).map { c ->
            async {
                clients[c % clients.size].connectAsync(server.localAddr).use { conn ->
                    var ok = 0
                    val answer = ByteArray(2_000)
                    for (r in 1..REQUESTS) {
                        conn.write(byteArrayOf(1, (c and 0xff).toByte(), (c shr 8).toByte(), r.toByte()))
                        conn.readFully(answer)
                        check(answer.withIndex().all { (i, b) -> b == answerByte(c, r, i) }) { "connection $c request $r" }
                        ok++
                    }
                    // Cancellable: a read with nothing to come gives up at the timeout.
                    if (c == 0) check(withTimeoutOrNull(100) { conn.read(ByteArray(1)) } == null) { "a read with nothing to come" }
                    conn.shutdown()
                    ok
                }
            }
        }.awaitAll().sum()
        check(answered == CONNECTIONS * REQUESTS) { "answered $answered" }
        serving.join()
    } }
    sampler.cancel()
    val ms = (System.nanoTime() - started) / 1_000_000
    println("$CONNECTIONS connections x $REQUESTS requests answered in $ms ms on 2 app threads; JVM threads $base before, $peak at most")
    // A thread per pending call would add one per connection; the library's own threads are a
    // fixed few (its runtime thread, the drivers, one per core at most).
    check(peak - base <= 12) { "threads grew with the connections: $base -> $peak" }
    clients.forEach { it.close() }
    server.close()
    app.close()
    println("ok")
}
