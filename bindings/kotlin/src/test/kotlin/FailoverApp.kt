// Issue 55's Kotlin app, as its report describes it: 20 connections from a phone-like client
// (WiFi 127.0.0.1, cellular 127.0.0.2 as backup), 50 requests each, WiFi set down at request
// 20 and up at request 35. With ABI 1's C bool (a Kotlin true passed as -1) 419 of 1,000 were
// answered; every one must be. Run by crates/mpudp-ffi/tests/kotlin.rs.
import mpudp.Connection
import mpudp.Endpoint
import mpudp.Iface
import mpudp.Options
import java.util.concurrent.atomic.AtomicInteger
import kotlin.concurrent.thread

fun main() {
    val seed = ByteArray(32) { 3 }
    val (server, key) = Options.server().identitySeed(seed).use { Endpoint.server(it, "127.0.0.1:0") to it.publicKey() }
    val served = AtomicInteger()
    val acceptor = thread {
        repeat(20) {
            val c = server.accept(20_000)
            thread {
                c.use {
                    val req = ByteArray(100)
                    while (true) {
                        try { it.readFully(req, 20_000) } catch (e: Exception) { break }
                        it.write(ByteArray(2_000) { i -> (req[0] + i).toByte() }, timeoutMs = 20_000)
                        served.incrementAndGet()
                    }
                    it.shutdown()
                }
            }
        }
    }
    val client = Options.phone().serverKey(key)
        .address("127.0.0.1:0", "wifi", Iface.WIFI)
        .address("127.0.0.2:0", "cell", Iface.CELLULAR, backup = true)
        .use { Endpoint.client(it) }
    val conns = (0 until 20).map { client.connect(server.localAddr, 5_000) }
    var ok = 0
    val answer = ByteArray(2_000)
    for (r in 1..50) {
        if (r == 20) client.setPathUp("wifi", false)
        if (r == 35) client.setPathUp("wifi", true)
        for (c in conns) {
            try {
                c.write(ByteArray(100) { r.toByte() }, timeoutMs = 10_000)
                c.readFully(answer, 10_000)
                if (answer[5] == (r + 5).toByte()) ok++
            } catch (e: Exception) {
                println("request $r failed: ${e.message}")
            }
        }
    }
    val cell = conns.sumBy { c -> c.subflows().filter { it.path == 1 }.sumBy { it.dataBytesSent.toInt() } }
    println("$ok of 1000 requests answered; $cell bytes sent on cellular")
    check(ok == 1000) { "$ok of 1000 answered" }
    check(cell > 0) { "the cellular backup carried nothing while WiFi was down" }
    conns.forEach { it.shutdown(); it.close() }
    client.close()
    acceptor.join()
    server.close()
    println("ok")
}
