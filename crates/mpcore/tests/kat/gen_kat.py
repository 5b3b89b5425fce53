#!/usr/bin/env python3
"""Independent computation of the known-answer values in tests/crypto_kat.rs.

Uses only Python's hashlib/hmac and the `cryptography` package (for X25519, ChaCha20-Poly1305,
AES-GCM and the ChaCha20/AES header-protection masks), none of which share code with ring.
Run:  python3 crates/mpcore/tests/kat/gen_kat.py  (answers used by crates/mpcore/tests/crypto_kat.rs and crates/fastjoin/tests/kat.rs)
"""
import hashlib, hmac, struct, ipaddress
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305, AESGCM
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

def hx(b): return b.hex()

def token(key): return hashlib.sha256(struct.pack(">Q", key)).digest()[:4].hex()
def idsn(key): return hashlib.sha256(struct.pack(">Q", key)).digest()[24:].hex()

def hkdf_extract(salt, ikm): return hmac.new(salt, ikm, hashlib.sha256).digest()
def hkdf_expand(prk, info, n):
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest(); out += t; i += 1
    return out[:n]

KA, KB = 0x0102030405060708, 0x1112131415161718
RA, RB = 0x01020304, 0xA1A2A3A4
print("token(KA)", token(KA), "idsn(KA)", idsn(KA))
print("token(KB)", token(KB), "idsn(KB)", idsn(KB))
k = lambda a, b: struct.pack(">QQ", a, b)
print("synack hmac64", hmac.new(k(KB, KA), struct.pack(">II", RB, RA), hashlib.sha256).digest()[:8].hex())
print("ack hmac160", hmac.new(k(KA, KB), struct.pack(">II", RA, RB), hashlib.sha256).digest()[:20].hex())
print("add_addr v4", hmac.new(k(KA, KB), bytes([5]) + ipaddress.ip_address("192.0.2.1").packed + struct.pack(">H", 5201), hashlib.sha256).digest()[-8:].hex())
print("add_addr v6", hmac.new(k(KB, KA), bytes([9]) + ipaddress.ip_address("2001:db8::1").packed + struct.pack(">H", 443), hashlib.sha256).digest()[-8:].hex())
tokb = int(token(KB), 16)
print("fjo hmac", hmac.new(k(KA, KB), bytes([1]) + struct.pack(">QI", 0x0123456789ABCDEF, tokb), hashlib.sha256).digest()[:20].hex())
print("fji hmac", hmac.new(k(KA, KB), bytes([2]) + struct.pack(">QI", 42, tokb), hashlib.sha256).digest()[:20].hex())
print("reply dsn hmac", hmac.new(k(KB, KA), bytes([4]) + struct.pack(">QI", 7, tokb), hashlib.sha256).digest()[:20].hex())

# X25519: RFC 7748 section 6.1 keys.
alice = X25519PrivateKey.from_private_bytes(bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
bob_pub = X25519PublicKey.from_public_bytes(bytes.fromhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
shared = alice.exchange(bob_pub)
print("x25519 shared", hx(shared))
th = hashlib.sha256(b"initial transcript" + b"handshake transcript").digest()
print("th", hx(th))
master = hkdf_expand(hkdf_extract(th, shared), b"mpudp1 master", 32)
print("master", hx(master))
print("key c", hkdf_expand(master, b"mpudp1 key c", 8).hex(), "key s", hkdf_expand(master, b"mpudp1 key s", 8).hex())
for suite, nk in (("chacha", 32), ("aes", 16)):
    key = hkdf_expand(master, b"mpudp1 c2s key", nk)
    iv = hkdf_expand(master, b"mpudp1 c2s iv", 12)
    hp = hkdf_expand(master, b"mpudp1 c2s hp", nk)
    print(suite, "c2s key", hx(key), "iv", hx(iv), "hp", hx(hp))
    subflow, pn = 0x80000001, 7
    nonce = bytes(a ^ b for a, b in zip(iv, struct.pack(">IQ", subflow, pn)))
    header = bytes([0x40]) + bytes(range(8)) + bytes([pn])  # short header, pn_len 1, unprotected
    pt = b"hello, multipath world"
    ct = (ChaCha20Poly1305(key) if suite == "chacha" else AESGCM(key)).encrypt(nonce, pt, header)
    print(suite, "sealed", hx(ct))
    sample = ct[4 - 1:4 - 1 + 16]  # pn_offset + 4 from the pn start; ct starts after 1 pn byte
    if suite == "chacha":
        counter, n = sample[:4], sample[4:]
        enc = Cipher(algorithms.ChaCha20(hp, counter + n), mode=None).encryptor()
        mask = enc.update(b"\x00" * 5)
    else:
        enc = Cipher(algorithms.AES(hp), modes.ECB()).encryptor()
        mask = enc.update(sample)[:5]
    pkt = bytearray(header + ct)
    pkt[0] ^= mask[0] & 0x1f
    pkt[9] ^= mask[1]
    print(suite, "protected packet", hx(bytes(pkt)))

print("s2c key", hx(hkdf_expand(master, b"mpudp1 s2c key", 32)))
odcid = bytes(range(0x10, 0x18))
print("retry tag", hmac.new(b"mpudp v1 retry integrity", odcid + b"retry packet bytes", hashlib.sha256).digest()[:16].hex())
