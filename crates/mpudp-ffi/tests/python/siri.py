"""A Siri-like exchange through the C ABI from Python (ctypes), as a managed language sees it:
a server on a thread of its own, a phone-like client with WiFi and a cellular backup on
loopback, six requests; WiFi is reported lost after the third, and the event callback (called
on the library's thread) must report the cellular subflow. Usage: siri.py PATH/libmpudp_ffi.so
"""
import ctypes as C
import glob
import json
import os
import sys
import tempfile
import threading
import time

lib = C.CDLL(sys.argv[1])
u64, i32, u32 = C.c_uint64, C.c_int32, C.c_uint32
MPU_OK, MPU_ERR_INVALID, MPU_ERR_WOULD_BLOCK = 0, -1, -3
PRESET_PHONE, PRESET_SERVER = 1, 2
IFACE_WIFI, IFACE_CELLULAR = 1, 2
EVENT_SUBFLOW_ESTABLISHED, EVENT_CLOSED = 2, 11


class Event(C.Structure):
    _fields_ = [("kind", u32), ("path", i32), ("subflow", C.c_int64), ("value", u32), ("at_us", u64)]


CALLBACK = C.CFUNCTYPE(None, C.c_void_p, C.POINTER(Event))
lib.mpu_read.restype = C.c_ssize_t
lib.mpu_read.argtypes = [u64, C.c_void_p, C.c_size_t, i32]
lib.mpu_write.restype = C.c_ssize_t
lib.mpu_write.argtypes = [u64, C.c_char_p, C.c_size_t, i32]
lib.mpu_last_error.restype = C.c_size_t
lib.mpu_live_handles.restype = u64
for name in ["mpu_options_free", "mpu_endpoint_free", "mpu_conn_free", "mpu_shutdown"]:
    getattr(lib, name).argtypes = [u64]
lib.mpu_options_add_address.argtypes = [u64, C.c_char_p, C.c_char_p, u32, i32]
lib.mpu_options_server_key.argtypes = [u64, C.c_char_p]
lib.mpu_options_qlog_dir.argtypes = [u64, C.c_char_p]
lib.mpu_options_identity_seed.argtypes = [u64, C.c_char_p]
lib.mpu_options_public_key.argtypes = [u64, C.c_char_p, C.c_size_t]
lib.mpu_server_new.argtypes = [u64, C.c_char_p, C.POINTER(u64)]
lib.mpu_client_new.argtypes = [u64, C.POINTER(u64)]
lib.mpu_endpoint_local_addr.argtypes = [u64, C.c_char_p, C.c_size_t]
lib.mpu_connect.argtypes = [u64, C.c_char_p, i32, C.POINTER(u64)]
lib.mpu_accept.argtypes = [u64, i32, C.POINTER(u64)]
lib.mpu_path_set_up.argtypes = [u64, C.c_char_p, i32]
lib.mpu_set_event_callback.argtypes = [u64, CALLBACK, C.c_void_p]
lib.mpu_wait_closed.argtypes = [u64, i32, C.POINTER(u32)]
lib.mpu_next_event.argtypes = [u64, i32, C.POINTER(Event)]


def check(code, what):
    if code != MPU_OK:
        buf = C.create_string_buffer(256)
        lib.mpu_last_error(buf, 256)
        raise SystemExit(f"FAILED {what}: {code} ({buf.value.decode()})")


def new(fn, *args):
    out = u64()
    check(fn(*args, C.byref(out)), fn.__name__)
    return out.value


def read_exact(conn, n):
    buf = C.create_string_buffer(n)
    got = 0
    while got < n:
        r = lib.mpu_read(conn, C.addressof(buf) + got, n - got, 10000)
        if r <= 0:
            raise SystemExit(f"FAILED read: {r}")
        got += r
    return buf.raw


def byte_at(r, i):
    return (r * 31 + i * 7) & 0xFF


sopts = new(lib.mpu_options_new, PRESET_SERVER)
check(lib.mpu_options_identity_seed(sopts, bytes([7] * 32)), "identity")
key = C.create_string_buffer(128)
check(lib.mpu_options_public_key(sopts, key, 128), "public key")
server = new(lib.mpu_server_new, sopts, b"127.0.0.1:0")
lib.mpu_options_free(sopts)
addr = C.create_string_buffer(64)
check(lib.mpu_endpoint_local_addr(server, addr, 64), "local addr")


def serve():
    conn = new(lib.mpu_accept, server, 10000)
    while True:
        buf = C.create_string_buffer(2004)
        got = 0
        while got < 2004:
            r = lib.mpu_read(conn, C.addressof(buf) + got, 2004 - got, 10000)
            if r <= 0:
                lib.mpu_shutdown(conn)
                lib.mpu_wait_closed(conn, 5000, None)
                lib.mpu_conn_free(conn)
                return
            got += r
        req = buf.raw[0]
        resp = bytes(byte_at(req, i) for i in range(20000))
        assert lib.mpu_write(conn, resp, len(resp), 10000) == len(resp)


t = threading.Thread(target=serve)
t.start()

copts = new(lib.mpu_options_new, PRESET_PHONE)
check(lib.mpu_options_server_key(copts, key.value), "server key")
# The app keeps the connection's event log in its cache directory (qlog).
qlogs = tempfile.mkdtemp(prefix="mpudp-ffi-qlog-")
assert lib.mpu_options_qlog_dir(copts, b"") == MPU_ERR_INVALID
check(lib.mpu_options_qlog_dir(copts, qlogs.encode()), "qlog dir")
check(lib.mpu_options_add_address(copts, b"127.0.0.1:0", b"wifi", IFACE_WIFI, False), "wifi")
check(lib.mpu_options_add_address(copts, b"127.0.0.2:0", b"cell", IFACE_CELLULAR, True), "cell")
client = new(lib.mpu_client_new, copts)
lib.mpu_options_free(copts)
conn = new(lib.mpu_connect, client, addr.value, 5000)

seen = []
done = threading.Event()


@CALLBACK
def on_event(_ctx, ev):
    seen.append((ev.contents.kind, ev.contents.path))
    if ev.contents.kind == EVENT_CLOSED:
        done.set()


check(lib.mpu_set_event_callback(conn, on_event, None), "callback")
# The callback took the events: neither a second callback nor polling may have them.
assert lib.mpu_set_event_callback(conn, on_event, None) == MPU_ERR_INVALID
assert lib.mpu_next_event(conn, 0, C.byref(Event())) == MPU_ERR_INVALID

for r in range(1, 7):
    if r == 4:
        check(lib.mpu_path_set_up(client, b"wifi", False), "wifi down")
    req = bytes([r]) + bytes(2003)
    t0 = time.monotonic()
    assert lib.mpu_write(conn, req, len(req), 5000) == len(req)
    resp = read_exact(conn, 20000)
    ms = (time.monotonic() - t0) * 1e3
    assert resp == bytes(byte_at(r, i) for i in range(20000)), f"response {r}"
    print(f"request {r}: {ms:.2f} ms{' (WiFi down)' if r >= 4 else ''}")

assert lib.mpu_read(conn, None, 8, 0) == MPU_ERR_INVALID
assert lib.mpu_read(123456789, C.create_string_buffer(8), 8, 0) == MPU_ERR_INVALID
check(lib.mpu_shutdown(conn), "shutdown")
assert lib.mpu_read(conn, C.create_string_buffer(8), 8, 5000) == 0, "end of stream"
reason = u32(99)
check(lib.mpu_wait_closed(conn, 5000, C.byref(reason)), "closed")
assert done.wait(5), "the callback saw the close"
assert (EVENT_SUBFLOW_ESTABLISHED, 1) in seen, f"a cellular subflow in the events: {seen}"
t.join()
lib.mpu_conn_free(conn)
lib.mpu_endpoint_free(client)
lib.mpu_endpoint_free(server)
assert lib.mpu_live_handles() == 0, lib.mpu_live_handles()
# The log: one client connection, the cellular subflow's join and packets in it.
logs = glob.glob(os.path.join(qlogs, "client-*.sqlog"))
assert len(logs) == 1, logs
records = [json.loads(r) for r in open(logs[0]).read().split("\x1e") if r.strip()]
assert records[0]["qlog_format"] == "JSON-SEQ", records[0]
assert any(r["name"] == "mpudp:subflow_updated" and r["data"].get("path_id") == 1 for r in records[1:])
assert any(r["name"] == "transport:packet_sent" and r["data"]["path_id"] == 1 for r in records[1:])
print("ok")
